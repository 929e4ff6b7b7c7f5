"""Every sandbox backend must contain these hostile programs, with the right status.

The same cases run against each backend (see conftest.py); the `box` fixture
then checks that no process, cgroup or mount outlived the run.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from atoll.core.sandbox import Limits, Mount, SandboxSpec, Status

pytestmark = pytest.mark.timeout(120)


def py(code: str) -> list[str]:
    return ["python3", "-c", code]


FORK_BOMB = ["sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"]
MEMORY_BOMB = py("chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 2**20))")
CPU_SPIN = py("while True:\n    pass")
CPU_SPIN_FORKED = ["sh", "-c", "for i in 1 2 3; do (while :; do :; done) & done; wait"]
SLEEP = ["sleep", "60"]
SLEEP_SILENT = ["sh", "-c", "exec >/dev/null 2>&1; sleep 60"]
YES = ["yes"]
YES_STDERR = ["sh", "-c", "yes >&2"]


def connect(port: int) -> list[str]:
    return py(
        "import socket\n"
        f"socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'escaped')\n"
        "print('connected')"
    )


def with_limits(spec: SandboxSpec, **changes: object) -> SandboxSpec:
    return dataclasses.replace(spec, limits=dataclasses.replace(spec.limits, **changes))


def test_plain_run_reports_output_and_exit_code(box, test_uid):
    backend, spec = box
    result = backend.run(["sh", "-c", "id -u; echo oops >&2; exit 3"], spec)
    assert result.status is Status.RUNTIME_ERROR
    assert result.exit_code == 3 and result.signal is None
    assert result.stdout == f"{test_uid}\n".encode()
    assert result.stderr == b"oops\n"
    assert result.wall_seconds < 5


def test_stdin_reaches_the_program(box):
    backend, spec = box
    data = os.urandom(300_000)
    result = backend.run(["cat"], spec, stdin=data)
    assert result.ok and result.stdout == data


def test_killed_by_a_signal_is_a_runtime_error(box):
    backend, spec = box
    result = backend.run(["sh", "-c", "kill -SEGV $$"], spec)
    assert result.status is Status.RUNTIME_ERROR
    assert result.signal == signal.SIGSEGV


def test_environment_is_only_what_the_spec_declares(box, monkeypatch):
    backend, spec = box
    monkeypatch.setenv("ATOLL_HOST_SECRET", "hunter2")
    spec = dataclasses.replace(spec, env={"GREETING": "hello"})
    result = backend.run(["env"], spec)
    assert result.ok
    assert b"GREETING=hello" in result.stdout
    assert b"hunter2" not in result.stdout


def test_fork_bomb_is_contained(box):
    backend, spec = box
    spec = with_limits(spec, processes=32, wall_seconds=3)
    result = backend.run(FORK_BOMB, spec)
    assert result.status is not Status.OK
    assert result.wall_seconds < 10
    # The host can still start processes.
    assert backend.run(["true"], spec).ok


def test_memory_bomb_reports_memory_limit(box):
    backend, spec = box
    spec = with_limits(spec, memory_bytes=96 * 2**20)
    result = backend.run(MEMORY_BOMB, spec)
    assert result.status is Status.MEMORY_LIMIT
    assert result.peak_memory_bytes <= 110 * 2**20


def test_cpu_spin_reports_cpu_time_limit(box):
    backend, spec = box
    spec = with_limits(spec, cpu_seconds=1, wall_seconds=20)
    result = backend.run(CPU_SPIN, spec)
    assert result.status is Status.CPU_TIME_LIMIT
    # cpuacct and the kernel's per-process rlimit clock differ a little on a busy VM.
    assert 0.5 <= result.cpu_seconds <= 4
    assert result.wall_seconds < 8


def test_cpu_spread_over_processes_counts_as_a_whole(box):
    backend, spec = box
    spec = with_limits(spec, cpu_seconds=1, wall_seconds=20)
    result = backend.run(CPU_SPIN_FORKED, spec)
    assert result.status is Status.CPU_TIME_LIMIT
    assert result.wall_seconds < 8


def test_sleeping_past_the_wall_clock(box):
    backend, spec = box
    spec = with_limits(spec, wall_seconds=1)
    for argv in (SLEEP, SLEEP_SILENT):
        result = backend.run(argv, spec)
        assert result.status is Status.WALL_TIME_LIMIT
        assert 0.9 <= result.wall_seconds < 5


def test_unbounded_output_is_cut_and_kept_from_the_start(box):
    backend, spec = box
    spec = with_limits(spec, stdout_bytes=1000, stderr_bytes=500)
    result = backend.run(YES, spec)
    assert result.status is Status.OUTPUT_LIMIT
    assert result.stdout == b"y\n" * 500 and result.stdout_truncated
    result = backend.run(YES_STDERR, spec)
    assert result.status is Status.OUTPUT_LIMIT
    assert result.stderr == b"y\n" * 250 and result.stderr_truncated


def test_file_size_limit(box):
    backend, spec = box
    spec = with_limits(spec, file_size_bytes=2**20)
    result = backend.run(["sh", "-c", "head -c 4000000 /dev/zero > /tmp/big"], spec)
    assert result.status is Status.OUTPUT_LIMIT


def test_open_files_limit(box):
    backend, spec = box
    spec = with_limits(spec, open_files=32)
    code = "files = [open('/dev/null') for _ in range(100)]"
    result = backend.run(py(code), spec)
    assert result.status is Status.RUNTIME_ERROR
    assert b"Too many open files" in result.stderr


def test_stack_and_address_space_limits_reach_the_program(box):
    backend, spec = box
    spec = with_limits(spec, stack_bytes=64 * 2**20, address_space_bytes=256 * 2**20)
    result = backend.run(["sh", "-c", "ulimit -s; ulimit -v"], spec)
    assert result.ok, result.stderr
    assert result.stdout == b"65536\n262144\n"
    big = backend.run(py("bytearray(400 * 2**20)"), spec)
    assert big.status is not Status.OK
    assert b"MemoryError" in big.stderr


def test_host_loopback_is_unreachable_with_network_off(box):
    backend, spec = box
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[bytes] = []

    def accept() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        result = backend.run(connect(port), spec)
    finally:
        thread.join()
        server.close()
    assert result.status is Status.RUNTIME_ERROR
    assert b"connected" not in result.stdout
    assert accepted == []


def test_root_only_files_are_not_readable(box, tmp_path):
    backend, spec = box
    private = tmp_path / "private"
    private.mkdir()
    secret = private / "secret"
    secret.write_text("s3cret")
    secret.chmod(0o600)
    spec = dataclasses.replace(spec, mounts=(Mount(private, "/data"),))
    result = backend.run(["cat", "/data/secret"], spec)
    assert result.status is Status.RUNTIME_ERROR
    assert b"s3cret" not in result.stdout
    # Nothing of the host's home directories is in the box at all, even a
    # world-readable file.
    canary = Path.home() / f".atoll-sandbox-canary-{os.getpid()}"
    canary.write_text("host-home-secret")
    canary.chmod(0o644)
    try:
        result = backend.run(["sh", "-c", f"cat {canary}; cat /etc/shadow"], spec)
    finally:
        canary.unlink()
    assert result.status is Status.RUNTIME_ERROR
    assert b"host-home-secret" not in result.stdout and b"root:" not in result.stdout


def test_writes_outside_the_writable_mounts_fail(box, tmp_path, test_uid):
    backend, spec = box
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    (readonly / "keep").write_text("original")
    (readonly / "keep").chmod(0o666)  # even a world-writable file stays unchanged
    work = tmp_path / "work"
    work.mkdir()
    os.chown(work, test_uid, test_uid)
    spec = dataclasses.replace(
        spec,
        mounts=(Mount(readonly, "/box-ro"), Mount(work, "/box-work", writable=True)),
        workdir="/box-work",
    )
    for target in ("/escaped", "/usr/escaped", "/etc/escaped", "/box-ro/new", "/box-ro/keep"):
        result = backend.run(["sh", "-c", f"echo x > {target}"], spec)
        assert result.status is Status.RUNTIME_ERROR, target
    assert (readonly / "keep").read_text() == "original"
    assert sorted(p.name for p in readonly.iterdir()) == ["keep"]
    for host_path in ("/escaped", "/usr/escaped", "/etc/escaped", "/box-ro", "/box-work"):
        assert not os.path.lexists(host_path), host_path
    result = backend.run(["sh", "-c", "echo made > /box-work/out && cat out"], spec)
    assert result.ok and result.stdout == b"made\n"
    assert (work / "out").read_text() == "made\n"


def test_setuid_binaries_do_not_raise_privileges(box, tmp_path, test_uid):
    backend, spec = box
    tools = tmp_path / "tools"
    tools.mkdir()
    suid = tools / "id"
    shutil.copy("/usr/bin/id", suid)
    os.chown(suid, 0, 0)
    suid.chmod(0o4755)
    spec = dataclasses.replace(spec, mounts=(Mount(tools, "/tools"),))
    result = backend.run(["/tools/id", "-u"], spec)
    assert result.stdout == f"{test_uid}\n".encode()
    code = "import os\ntry:\n    os.setuid(0)\nexcept PermissionError:\n    print('refused')"
    result = backend.run(py(code), spec)
    assert result.ok and result.stdout == b"refused\n"
    result = backend.run(["sh", "-c", "grep CapEff /proc/self/status"], spec)
    assert result.ok and result.stdout.split()[-1] == b"0000000000000000"


def test_many_runs_in_parallel(box):
    backend, spec = box
    spec = with_limits(spec, memory_bytes=64 * 2**20)

    def one(i: int) -> bytes:
        result = backend.run(["sh", "-c", f"echo {i}"], spec)
        assert result.ok, result
        return result.stdout

    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(one, range(40)))
    assert outputs == [f"{i}\n".encode() for i in range(40)]


def test_no_limits_means_unlimited(box):
    backend, spec = box
    spec = dataclasses.replace(
        spec,
        limits=Limits(
            cpu_seconds=None,
            wall_seconds=None,
            memory_bytes=None,
            processes=None,
            file_size_bytes=None,
            open_files=None,
        ),
    )
    result = backend.run(["sh", "-c", "echo fine"], spec)
    assert result.ok and result.stdout == b"fine\n"
