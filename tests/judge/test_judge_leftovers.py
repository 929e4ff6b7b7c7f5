"""`kill -9` of a real judge mid-run: nothing it ran survives, and a restart removes what it left.

Each judge here is `atoll judge serve` as a process, judging a program that
never finishes under a 60 s wall clock, so its sandbox is busy when it is
killed. Its sandbox cgroups are found by name (they start with the judge's
pid), its sandboxed processes through those groups.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.ports import free_port
from support.processes import children_of, pids_where, running, sandbox_cgroups_of
from support.waiting import wait_for

from atoll.core.sandbox import owners
from atoll.judge import leftovers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _watches(pid: int, judge: int) -> bool:
    """Whether `pid` is the sandbox reaper watching the process `judge`."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return b"atoll.core.sandbox.reaper" in argv and str(judge).encode() in argv


def pids_in(groups: list[Path]) -> set[int]:
    found: set[int] = set()
    for group in groups:
        try:
            found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
        except OSError:
            continue
    return found


def programs_in(groups: list[Path]) -> set[int]:
    """The judged programs (not the compiler, not bubblewrap) running in `groups`."""
    found = set()
    for pid in pids_in(groups):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"/judge/solution\0"):
                found.add(pid)
        except OSError:
            continue
    return found


class Judge:
    """`atoll judge serve` in a session of its own."""

    def __init__(self, venv_bin: Path, problems: Path, state: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [
            str(venv_bin / "atoll"), "judge", "serve", "--port", str(self.port),
            "--problems", str(problems), "--state-dir", str(state), "--workers", "2",
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Judge:
        self.proc = subprocess.Popen(
            self.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )

        def up() -> bool:
            assert self.proc is not None and self.proc.poll() is None, "the judge exited"
            try:
                return httpx.get(f"{self.url}/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, 60, "the judge answers /health")
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def run_forever_program(self, source: bytes) -> None:
        """Submit a program that never ends; return once its cases run in the sandbox."""
        response = httpx.post(f"{self.url}/submit", json={"pid": "0", "code": source.decode()})
        assert response.status_code == 200, response.text
        wait_for(lambda: len(programs_in(sandbox_cgroups_of(self.pid))) == 2, 60, "both cases run")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def slow_problems(tmp_path_factory: pytest.TempPathFactory, small_problems: Path) -> Path:
    """Problem 0 with two cases and a 60 s wall clock: a sleeping program runs that long."""
    root = tmp_path_factory.mktemp("problems-slow")
    shutil.copytree(small_problems / "0", root / "0")
    config = root / "0" / "problem.toml"
    config.write_text(config.read_text().replace("wall_seconds = 4.0", "wall_seconds = 60.0"))
    return root


@pytest.fixture
def judges(venv_bin: Path, slow_problems: Path, tmp_path: Path) -> Iterator:
    started: list[Judge] = []

    def make(state: str) -> Judge:
        judge = Judge(venv_bin, slow_problems, tmp_path / state)
        started.append(judge)
        return judge

    yield make
    for judge in started:  # a kill: the watcher removes what each judge ran
        judge.kill()
    for judge in started:
        wait_for(lambda judge=judge: not sandbox_cgroups_of(judge.pid), 15, "the judges' groups go")


def test_kill_9_leaves_no_sandboxed_process_and_no_cgroup(judges, sources) -> None:
    judge = judges("state").start()
    judge.run_forever_program(sources["sleeper"])
    sandboxed = pids_in(sandbox_cgroups_of(judge.pid))
    judge.kill()
    wait_for(
        lambda: not sandbox_cgroups_of(judge.pid), 15, "the killed judge's cgroups are removed"
    )
    wait_for(lambda: not any(map(running, sandboxed)), 15, "its sandboxed processes end")


def test_a_restart_removes_what_a_killed_judge_of_its_state_dir_left(judges, sources) -> None:
    other = judges("other-state").start()  # another state dir: never touched
    killed = judges("state").start()
    killed.run_forever_program(sources["sleeper"])
    other.run_forever_program(sources["sleeper"])
    watcher = next(iter(pids_where(lambda pid: _watches(pid, killed.pid))), None)
    assert watcher is not None
    # Everything dies at once (a kill of the whole machine's user session, the OOM killer):
    # the judge and the watcher that would clean up after it.
    os.kill(watcher, signal.SIGKILL)
    wait_for(lambda: not running(watcher), 10, "the watcher is dead")
    killed.kill()
    left = sandbox_cgroups_of(killed.pid)
    assert left, "nothing to clean up: the sandbox made no cgroup"
    # What escaped a sandbox's tie to the judge (set-up races) lives on in its groups.
    escaped = subprocess.Popen(["sleep", "600"])
    for group in left:
        (group / "cgroup.procs").write_text(str(escaped.pid))
    other_groups = sandbox_cgroups_of(other.pid)
    other_running = pids_in(other_groups)

    restarted = judges("state").start()

    assert sandbox_cgroups_of(killed.pid) == []
    assert escaped.wait(timeout=15) == -signal.SIGKILL
    assert sandbox_cgroups_of(other.pid) == other_groups
    assert pids_in(other_groups) == other_running
    assert httpx.get(f"{restarted.url}/health").json()["ok"] is True


def test_stale_socket_and_results_dirs_go_and_live_ones_stay(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = f"{gone.pid}.1"  # a start time no live process has
    live = owners.own_tag()
    root = tmp_path
    layout = {
        f"atoll-judge-{dead}-a1": ["judge.sock"],
        f"atoll-judge-results-{dead}-b2": [
            "judge.sqlite",
            "judge.sqlite-wal",
            "judge.sqlite.lock",
            "judge.sqlite.lock.holder.json",
        ],
        f"atoll-judge-{live}-c3": ["judge.sock"],  # this process: alive
        f"atoll-judge-{dead}-d4": ["judge.sock", "notes.txt"],  # not only a judge's files
        "atoll-judge-x1y2z3": ["judge.sock"],  # no owner in the name: not provably stale
    }
    for name, files in layout.items():
        (root / name).mkdir()
        for file in files:
            (root / name / file).write_text("")
    removed = leftovers.remove_stale_temp_dirs(root)
    assert sorted(p.name for p in removed) == sorted(
        [f"atoll-judge-{dead}-a1", f"atoll-judge-results-{dead}-b2"]
    )
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [f"atoll-judge-{live}-c3", f"atoll-judge-{dead}-d4", "atoll-judge-x1y2z3"]
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_mid_run_leaves_no_process_and_no_cgroup(
    signum: signal.Signals, venv_bin: Path, small_problems: Path, tmp_path: Path, sources
) -> None:
    """An orderly stop waits for the cases running (4 s wall clocks here), then nothing is left."""
    judge = Judge(venv_bin, small_problems, tmp_path / "state").start()
    try:
        judge.run_forever_program(sources["sleeper"])
        started = set(pids_in(sandbox_cgroups_of(judge.pid))) | set(children_of(judge.pid))
        assert judge.proc is not None
        judge.proc.send_signal(signum)
        judge.proc.wait(timeout=60)
        wait_for(lambda: not sandbox_cgroups_of(judge.pid), 15, "the judge's cgroups are removed")
        wait_for(lambda: not any(map(running, started)), 15, "what the judge started ends")
    finally:
        judge.kill()
