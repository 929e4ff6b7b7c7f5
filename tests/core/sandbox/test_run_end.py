"""How a session learns a run's end, and what of its cgroup the next runs reuse.

The run's pid 1 writes a last status line once it has reaped the program with
no process left (`launcher.c`); anything else means the server's report must
say how the run ended. On cgroup v1 a finished run's pids and CPU directories
are kept for the next runs only when no process is left in them.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from support import ci

from atoll.core.sandbox import cgroupfs
from atoll.core.sandbox.cgroups import CgroupPool, RunCgroup, layout
from atoll.core.sandbox.launch_server import _end_record

START = b'{ "child-pid": 4242 }\n'


def end_line(code: int, utime: int = 1500, stime: int = 250, maxrss: int = 3072) -> bytes:
    """The last line as `launcher.c`'s `write_end` formats it."""
    return (
        f'{{ "exit-code": {code}, "utime-us": {utime}, "stime-us": {stime}, '
        f'"maxrss-kb": {maxrss} }}\n'
    ).encode()


# A program's exit code, or 128 + N for one ended by signal N (137: SIGKILL, 141: SIGPIPE).
@pytest.mark.parametrize("code", [0, 1, 137, 141])
def test_the_launchers_last_line_is_the_runs_end(code: int) -> None:
    ended = _end_record(START + end_line(code))
    assert ended is not None
    wait_status, rusage = ended
    assert os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == code
    assert (rusage.ru_utime, rusage.ru_stime, rusage.ru_maxrss) == (0.0015, 0.00025, 3072)


@pytest.mark.parametrize(
    "text",
    [
        b"",  # pid 1 died before the program started
        START,  # the program started, then pid 1 was killed
        START + end_line(0)[:30],  # cut short
        end_line(0) + START,  # not the last line
    ],
)
def test_without_a_whole_last_line_the_server_says_how_the_run_ended(text: bytes) -> None:
    assert _end_record(text) is None


@pytest.fixture
def v1() -> None:
    ci.need(layout() is not None, "no writable cgroup hierarchy", "CI runs the tests as root")
    if cgroupfs.unified():
        ci.not_applicable("cgroup v2 keeps every controller in one directory: none is reused")


def _group(pool: CgroupPool) -> RunCgroup:
    group = RunCgroup.create(256 * 2**20, 8, account_cpu=True, pool=pool)
    assert group is not None and group.pids is not None and group.cpu is not None
    return group


def test_an_empty_runs_pids_and_cpu_directories_serve_the_next_run(v1) -> None:
    pool = CgroupPool()
    first = _group(pool)
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass"
    burner = subprocess.Popen(["python3", "-c", burn])
    cgroupfs.write(f"{first.cpu}/cgroup.procs", str(burner.pid))
    assert burner.wait(timeout=30) == 0
    assert (first.cpu_seconds() or 0) > 0.05
    kept = pool.recycle(first)
    try:
        assert sorted(kept) == sorted([first.pids, first.cpu])
        assert first.memory is not None and not os.path.exists(first.memory)
        second = _group(pool)
        assert (second.pids, second.cpu) == (first.pids, first.cpu)
        assert second.memory != first.memory and os.path.isdir(second.memory or "")
        assert second.cpu_seconds() == 0.0
        assert second.name != first.name
        second.remove()
    finally:
        pool.clear()
    assert not any(os.path.exists(d) for d in (*first.dir_names, *second.dir_names))


def test_a_directory_with_a_process_left_is_not_kept(v1) -> None:
    pool = CgroupPool()
    group = _group(pool)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        assert group.pids is not None
        cgroupfs.write(f"{group.pids}/cgroup.procs", str(sleeper.pid))
        assert pool.recycle(group) == [group.cpu]  # its pids directory is removed instead
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
        assert not os.path.exists(group.pids) and pool.take(os.path.dirname(group.pids)) is None
    finally:
        sleeper.kill()
        sleeper.wait()
        pool.clear()
