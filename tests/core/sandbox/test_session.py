"""bwrap sessions: a box built once, each run as isolated from the runs before it as a fresh box.

The whole conformance suite also runs through sessions, each check's program
after a hostile run in the same box (`session_backend`, the `bwrap-session`
backend of test_conformance.py); these tests name the per-run properties one
by one: what a run sees of the one before, its own limits and counters, the
same limits as a fresh box, per-run mounts, and a session that holds no process.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ci

from atoll.core.sandbox import (
    Limits,
    Mount,
    SandboxError,
    SandboxSpec,
    Status,
    cgroupfs,
    get_backend,
)
from atoll.core.sandbox.bwrap_session import MAX_RETIRED, spare_groups
from atoll.core.sandbox.conformance.audit import processes_of_uid
from atoll.core.sandbox.session import SandboxSession
from atoll.core.sizes import MiB

pytestmark = pytest.mark.timeout(120)

LIMITS = Limits(cpu_seconds=5, wall_seconds=10, memory_bytes=256 * MiB, processes=32)


@pytest.fixture
def spec(test_uid: int) -> SandboxSpec:
    return SandboxSpec(uid=test_uid, gid=test_uid, limits=LIMITS)


@pytest.fixture
def session(spec: SandboxSpec) -> Iterator[SandboxSession]:
    with get_backend("bwrap").session(spec, slots=("/data", "/work")) as opened:
        yield opened


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


def test_a_run_sees_nothing_the_run_before_left(session: SandboxSession, test_uid: int) -> None:
    left = session.run(
        sh(
            "echo secret > /tmp/left; mkdir /tmp/dir; chmod 0 /tmp/dir; "
            "setsid sleep 60 </dev/null >/dev/null 2>&1 & "
            "ipcmk -M 4096 >/dev/null && ipcmk -Q >/dev/null && ipcmk -S 1 >/dev/null; "
            'python3 -c \'import ctypes; rt = ctypes.CDLL("librt.so.1"); '
            'assert rt.mq_open(b"/left", 0o100 | 0o2, 0o666, None) >= 0\' && echo left'
        )
    )
    assert left.ok and left.stdout == b"left\n", left
    assert processes_of_uid(test_uid, zombies=True) == []  # the sleeper died with its run
    seen = session.run(
        sh(
            "ls -A /tmp; ipcs -m -q -s | grep -c '^0x' ; "
            'python3 -c \'import ctypes; rt = ctypes.CDLL("librt.so.1"); '
            'print(rt.mq_open(b"/left", 0))\'; ls /proc | grep -c "^[0-9]"'
        )
    )
    # An empty /tmp, no IPC object, no queue, two processes in /proc (pid 1 and the shell)
    # besides those the script runs.
    lines = seen.stdout.decode().split()
    assert lines[:2] == ["0", "-1"], seen
    assert int(lines[2]) <= 5, seen


def test_each_run_has_its_own_limits_and_counters(session: SandboxSession) -> None:
    memory = session.run(
        ["python3", "-c", "b = bytearray(600 * 2**20)"], dataclasses.replace(LIMITS)
    )
    assert memory.status is Status.MEMORY_LIMIT, memory
    spin = session.run(
        ["python3", "-c", "while True: pass"], dataclasses.replace(LIMITS, cpu_seconds=1)
    )
    assert spin.status in (Status.CPU_TIME_LIMIT, Status.WALL_TIME_LIMIT), spin
    bomb = session.run(
        sh("while :; do sleep 60 & done"), dataclasses.replace(LIMITS, wall_seconds=3)
    )
    assert not bomb.ok, bomb
    flood = session.run(["yes"], dataclasses.replace(LIMITS, stdout_bytes=64 * 1024))
    assert flood.status is Status.OUTPUT_LIMIT, flood
    late = session.run(["sleep", "30"], dataclasses.replace(LIMITS, wall_seconds=0.5))
    assert late.status is Status.WALL_TIME_LIMIT, late
    # The next run has its whole budget, and counters of its own.
    after = session.run(
        sh(
            "python3 -c 'b = bytearray(180 * 2**20); b[::4096] = b\"x\" * len(b[::4096])' && "
            "for i in $(seq 25); do sleep 0.2 & done; wait; echo done"
        )
    )
    assert after.ok and after.stdout == b"done\n", after
    assert after.cpu_seconds < 1.0
    assert 180 * MiB <= after.peak_memory_bytes < 256 * MiB


def test_a_run_meets_the_limits_of_a_fresh_box(spec: SandboxSpec, session: SandboxSession) -> None:
    """rlimits, credentials, capabilities, hostname, the environment: the same either way.

    /tmp's mode and owners, not its time: a prepared run's /tmp was mounted ahead of it."""
    script = sh(
        "cat /proc/self/limits; grep -E '^(Uid|Gid|Groups|Cap|NoNewPrivs|Seccomp)' "
        "/proc/self/status; hostname; env | sort; pwd; ls -A /; stat -c '%A %U %G %s' /tmp; "
        "echo $$"
    )
    for limits in (
        LIMITS,
        Limits(cpu_seconds=2.5, stack_bytes=64 * MiB, address_space_bytes=300 * MiB),
        Limits(cpu_seconds=None, memory_bytes=None, processes=None, file_size_bytes=None),
    ):
        fresh = get_backend("bwrap").run(script, dataclasses.replace(spec, limits=limits))
        shared = session.run(script, limits)
        assert fresh.ok and shared.ok, (fresh, shared)
        expected = fresh.stdout.replace(b"data\n", b"").replace(b"work\n", b"")
        assert shared.stdout.replace(b"data\n", b"").replace(b"work\n", b"") == expected


def test_per_run_mounts_are_the_runs_own(
    session: SandboxSession, tmp_path: Path, test_uid: int
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "input").write_text("given\n")
    work = tmp_path / "work"
    work.mkdir()
    os.chown(work, test_uid, test_uid)
    mounts = (Mount(data, "/data"), Mount(work, "/work", writable=True))
    wrote = session.run(
        sh("cat /data/input; echo out > /work/out; echo no > /data/new || echo refused"),
        mounts=mounts,
    )
    assert wrote.stdout == b"given\nrefused\n", wrote
    assert (work / "out").read_text() == "out\n"
    assert sorted(p.name for p in data.iterdir()) == ["input"]
    after = session.run(sh("ls -A /data /work"))
    assert after.ok and after.stdout == b"/data:\n\n/work:\n", after
    nested = session.run(
        ["cat", "/work/in.txt"], mounts=(mounts[1], Mount(data / "input", "/work/in.txt"))
    )
    assert nested.stdout == b"given\n", nested
    with pytest.raises(SandboxError, match="not a slot"):
        session.run(["true"], mounts=(Mount(data, "/elsewhere"),))
    with pytest.raises(SandboxError, match="fresh /tmp"):
        session.run(["true"], mounts=(Mount(data, "/tmp"),))


def test_a_session_holds_no_process_and_closes(spec: SandboxSpec) -> None:
    backend = get_backend("bwrap")
    session = backend.session(spec)
    held = os.fstat(session._box.fds["mnt"]).st_ino  # type: ignore[attr-defined]
    assert _processes_in_mount_namespace(held) == []
    assert session.run(["true"]).ok
    assert _processes_in_mount_namespace(held) == []
    assert backend.leftovers() == []  # the next run's cgroup, kept ready, is no leftover
    session.close()  # and goes with the session
    assert backend.leftovers() == []
    with pytest.raises(SandboxError, match="closed"):
        session.run(["true"])


def _processes_in_mount_namespace(inode: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.stat(entry / "ns" / "mnt").st_ino == inode:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_session_outlives_the_thread_that_opened_it(spec: SandboxSpec) -> None:
    """Its launcher server watches this process, not the thread that started it (the
    parent-death signal follows the thread: a pool's worker thread that ended took it along)."""
    opened: list[SandboxSession] = []
    worker = threading.Thread(target=lambda: opened.append(get_backend("bwrap").session(spec)))
    worker.start()
    worker.join()
    with opened[0] as session:
        assert session.run(["true"]).ok
        assert session.run(["true"]).ok


def test_each_run_gets_its_own_memory_limit_up_or_down(session: SandboxSession) -> None:
    """The next run's cgroup is made ahead with this run's limits; a run with others gets its own."""
    touch = ["python3", "-c", "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"]
    statuses = []
    for memory in (128 * MiB, 512 * MiB, 128 * MiB, None, 128 * MiB):
        limits = dataclasses.replace(LIMITS, memory_bytes=memory)
        statuses.append(session.run(touch, limits).status)
    assert statuses == [
        Status.MEMORY_LIMIT,
        Status.OK,
        Status.MEMORY_LIMIT,
        Status.OK,
        Status.MEMORY_LIMIT,
    ], statuses


def test_runs_prepared_ahead_are_the_runs_a_fresh_box_would_be(
    spec: SandboxSpec, session: SandboxSession, test_uid: int
) -> None:
    """`warm` makes runs ready before they are asked for (their cgroup joined, the box
    entered, /proc and /tmp mounted for the limits it was told); a run with other limits
    still gets its own, /tmp's size included, and a run of another kind a run made for it."""
    script = sh(
        "cat /proc/self/limits; df -k /tmp | tail -1 | tr -s ' ' | cut -d' ' -f2; "
        "grep -E '^(Uid|Gid|Groups|Cap|NoNewPrivs)' /proc/self/status; ls -A /tmp; echo $$"
    )
    session.warm(LIMITS, 4)
    for limits in (
        LIMITS,
        dataclasses.replace(LIMITS, memory_bytes=128 * MiB, cpu_seconds=2.5),
        dataclasses.replace(LIMITS, memory_bytes=None),
        Limits(cpu_seconds=None, memory_bytes=None, processes=None, file_size_bytes=None),
        LIMITS,
    ):
        fresh = get_backend("bwrap").run(script, dataclasses.replace(spec, limits=limits))
        prepared = session.run(script, limits)
        assert fresh.ok and prepared.ok, (fresh, prepared)
        assert prepared.stdout == fresh.stdout
    session.warm(LIMITS, 3)
    assert session.run(sh("echo left > /tmp/left; sleep 60 &")).ok
    after = session.run(sh("ls -A /tmp; ls /proc | grep -c '^[0-9]'"))
    assert after.stdout.split()[0] in (b"3", b"4", b"5"), after  # no file, no process left
    assert processes_of_uid(test_uid, zombies=True) == []


def test_a_runs_cgroup_goes_once_its_pid_1_has_been_reaped(spec: SandboxSpec) -> None:
    """A run is over for its caller once its program has been reaped; its cgroup (counters
    read) is held, no leftover, while the session runs on, and goes when it is next warmed
    (its pid 1 reaped first), or with the session."""
    backend = get_backend("bwrap")
    others = spare_groups()  # those of other sessions of this process
    with backend.session(spec) as session:
        assert session.run(["true"]).ok
        after_first = spare_groups() - others
        assert session.run(["true"]).ok
        assert after_first <= spare_groups()  # held, not left over
        assert all(os.path.isdir(name) for name in after_first)
        assert backend.leftovers() == []
        session.warm()
        after_warm = spare_groups() - others
        first = after_first - after_warm  # the first runs' memory directories, at least
        assert first and not any(os.path.exists(name) for name in first)
        assert all(os.path.isdir(name) for name in after_warm)
        assert backend.leftovers() == []
    assert not any(os.path.exists(name) for name in after_warm)
    assert backend.leftovers() == []


def test_a_session_never_warmed_removes_its_oldest_runs_cgroups_past_a_bound(
    spec: SandboxSpec,
) -> None:
    """Without a `warm`, a session holds the cgroups of its last MAX_RETIRED runs, no more."""
    backend = get_backend("bwrap")
    others = spare_groups()  # those of other sessions of this process
    with backend.session(spec) as session:
        assert session.run(["true"]).ok
        first = spare_groups() - others
        for _ in range(MAX_RETIRED):
            assert session.run(["true"]).ok
        assert all(os.path.isdir(name) for name in first)  # MAX_RETIRED runs after it
        assert session.run(["true"]).ok
        gone = {name for name in first if not os.path.exists(name)}
        assert gone and gone.isdisjoint(spare_groups())  # the first run's, at least
        assert backend.leftovers() == []


def test_a_session_reuses_its_runs_pids_and_cpu_cgroups_with_counters_reset(
    spec: SandboxSpec,
) -> None:
    """On cgroup v1 a finished run's pids and CPU directories serve a later run (its memory
    directory never does); that run counts its own processes and CPU time from zero."""
    if cgroupfs.unified():
        ci.not_applicable("cgroup v2 keeps every controller in one directory: none is reused")
    limits = dataclasses.replace(LIMITS, cpu_seconds=5, processes=8)
    others = spare_groups()  # those of other sessions of this process
    with get_backend("bwrap").session(spec) as session:
        burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
        spin = session.run(["python3", "-c", burn], limits)
        assert spin.ok and spin.cpu_seconds >= 0.4, spin
        held = spare_groups() - others
        session.warm(limits, 3)  # the spin's cgroup goes: its pids and CPU directories serve
        for _ in range(3):
            quick = session.run(sh("for i in 1 2 3 4 5; do true & done; wait"), limits)
            assert quick.ok and quick.cpu_seconds < 0.3, quick
        session.warm(limits, 3)  # and so do those of the runs that were prepared then
        kept = held & spare_groups()
        assert kept and not any("/memory/" in name for name in kept), (held, spare_groups())


def test_warming_for_other_limits_replaces_the_runs_ready(spec: SandboxSpec) -> None:
    """Runs readied for limits that need other cgroups (here no process limit) go as the
    session is warmed for the next limits, not as the first of those runs starts."""
    unlimited = dataclasses.replace(LIMITS, processes=None)
    with get_backend("bwrap").session(spec) as session:
        before = spare_groups()
        session.warm(LIMITS, 3)
        first = spare_groups() - before
        session.warm(unlimited, 3)
        second = spare_groups() - before
        assert first and second and first.isdisjoint(second), (first, second)
        session.warm(unlimited, 3)
        assert spare_groups() - before == second  # ready for these limits: kept
        assert session.run(["true"], unlimited).ok


def test_a_closed_session_leaves_none_of_the_runs_it_prepared(spec: SandboxSpec) -> None:
    backend = get_backend("bwrap")
    session = backend.session(spec)
    session.warm(LIMITS, 5)
    assert session.run(["true"], LIMITS).ok
    assert backend.leftovers() == []  # the runs kept ready are no leftovers
    session.close()
    assert backend.leftovers() == []
    session.warm(LIMITS, 5)  # a closed session prepares nothing
    assert backend.leftovers() == []


def test_a_prepared_run_killed_before_its_turn_is_made_again(session: SandboxSession) -> None:
    """A process kept ready for a run that dies first (killed, out of memory) costs that run
    nothing but its head start: the run is made when it comes, in the cgroup it was given."""
    for _ in range(3):
        prepared = session._prepared  # type: ignore[attr-defined]
        before = {id(group) for group in prepared}
        session.warm(LIMITS, len(prepared) + 2)
        made = [group for group in prepared if id(group) not in before]
        killed: set[int] = set()
        deadline = time.monotonic() + 10
        while not all(group.pids_inside() for group in made):  # joined by now
            assert time.monotonic() < deadline, "the prepared runs never joined their cgroups"
            time.sleep(0.01)
        for group in prepared:
            killed |= group.pids_inside()
            group.kill_all()
        while any(Path(f"/proc/{pid}").exists() for pid in killed):  # the server saw them end
            assert time.monotonic() < deadline, "the killed runs were never reaped"
            time.sleep(0.01)
        ran = session.run(sh("echo ran; cat /proc/self/cgroup | grep -c memory:/$"), LIMITS)
        assert ran.ok and ran.stdout == b"ran\n1\n", ran
