"""A Reef that a killed job left running: found by the run's next job, which stops it at its end.

The job plugin starts Reef in a session of its own, so a job killed with
SIGKILL (no `on_job_end`, no atexit) leaves it serving, with its resolved
configuration (token included) on disk. So the plugin records, in the run's
state directory, that it owns the Reef it started: its own pid and start
time and its stack directory. The next job of the same run (same state
directory) finds the record; once the recorded owner is provably dead:

- if that Reef still runs and accepts this job's token, the job adopts it:
  its processes move into the job's own stack state, so the job's end stops
  them and removes the token-bearing runtime files of the adopted run dir;
- otherwise what still runs of it is stopped (a Reef with another token is
  of no use to this job's agents) and its runtime files are removed.

A Reef recorded by a live owner, or one that `atoll stack up` started
(detached on purpose, never recorded), is never touched.

When nobody runs the run again, the record is still found through the
machine's index of such runs (`atoll.stack.owner_index`): `left_behind`
lists the Reefs whose owner is dead (`atoll stack status`, `atoll doctor`),
and `stop_left_behind` stops them and removes their token-bearing runtime
files (`atoll stack down --orphans`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.console import Console

from atoll.core import run_lock
from atoll.core.doctor import Finding
from atoll.core.durable import atomic_write_bytes
from atoll.core.reef_runtime import RUN_SUBDIR
from atoll.core.sandbox import owners
from atoll.stack import owner_index, processes, reef_run_dir
from atoll.stack import state as state_file
from atoll.stack.errors import StackError
from atoll.stack.processes import Recorded
from atoll.stack.state import StackState

RECORD = "reef-stack-owner.json"
# How long a left-behind Reef gets to stop on SIGTERM before it is killed.
STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class Owned:
    owner: str
    stack_dir: Path
    reef_url: str


def record_path(state_dir: Path) -> Path:
    return state_dir / RECORD


def _lock(state_dir: Path) -> run_lock.Lock:
    """Serializes taking over and stopping one run's left-behind Reef."""
    what = f"the left-behind Reef of the run in {state_dir}"
    return run_lock.wait(state_dir / f".{RECORD}.lock", timeout=60, what=what, error=StackError)


def record(state_dir: Path, stack_dir: Path, reef_url: str) -> None:
    """Note that this process owns the Reef started from `stack_dir`."""
    data = {"owner": owners.own_tag(), "stack_dir": str(stack_dir), "reef_url": reef_url}
    atomic_write_bytes(record_path(state_dir), json.dumps(data).encode() + b"\n", make_parents=True)
    owner_index.add(state_dir)


def release(state_dir: Path) -> None:
    """Drop this process's record (the Reef it owned has been stopped)."""
    found = _load(state_dir)
    if found is not None and found.owner == owners.own_tag():
        record_path(state_dir).unlink(missing_ok=True)
        owner_index.remove(state_dir)


def _load(state_dir: Path) -> Owned | None:
    try:
        data = json.loads(record_path(state_dir).read_text())
        return Owned(str(data["owner"]), Path(data["stack_dir"]), str(data["reef_url"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def accepts(url: str, token: str) -> bool:
    """Whether the Reef at `url` answers an authenticated call with `token`."""
    try:
        response = httpx.get(
            url.rstrip("/") + "/reef/status",
            headers={"Authorization": f"Bearer {token}"},
            timeout=5.0,
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def take_over(state_dir: Path, stack_dir: Path, token: str, console: Console) -> None:
    """Adopt (into `stack_dir`) or stop the Reef a dead job of this run left; see the module."""
    found = _load(state_dir)
    if found is None or owners.alive(found.owner):
        return
    with _lock(state_dir):
        left = state_file.load(found.stack_dir)
        if left is not None and not left.reused:
            living = [p for p in left.processes if processes.alive(p)]
            if living and accepts(left.reef_url, token):
                left.run_dir = str(Path(left.run_dir or found.stack_dir / RUN_SUBDIR))
                if found.stack_dir != stack_dir:
                    state_file.save(stack_dir, left)
                    state_file.clear(found.stack_dir)
                record(state_dir, stack_dir, left.reef_url)
                console.print(
                    f"reef-stack: adopted the Reef at {left.reef_url} that a killed job left "
                    "running; it stops at this job's end"
                )
                return
        _stop(state_dir, found, left, console)


def _stop(state_dir: Path, found: Owned, left: StackState | None, console: Console) -> None:
    """Stop what still runs of a dead owner's Reef, remove its runtime files and its record."""
    if left is not None and not left.reused:
        if any(processes.alive(p) for p in left.processes):
            processes.stop(left.processes, grace=STOP_GRACE_S)
            console.print(
                f"reef-stack: stopped the Reef at {left.reef_url} that a killed job left running"
            )
        state_file.clear(found.stack_dir)
        if left.run_dir:
            reef_run_dir.remove_resolved_configs(Path(left.run_dir))
    reef_run_dir.remove_resolved_configs(found.stack_dir / RUN_SUBDIR)
    record_path(state_dir).unlink(missing_ok=True)
    owner_index.remove(state_dir)


@dataclass(frozen=True)
class LeftBehind:
    """A Reef whose owning job is dead: what of it still runs, and which files hold its token."""

    state_dir: Path
    owned: Owned
    living: tuple[Recorded, ...]
    token_files: tuple[Path, ...]

    def describe(self) -> str:
        pid = self.owned.owner.partition(".")[0]
        running = ", ".join(f"{p.name} pid {p.pid}" for p in self.living) or "nothing runs"
        line = (
            f"{self.owned.reef_url}: left by a killed job (pid {pid}) of the run in "
            f"{self.state_dir}; {running}"
        )
        if self.token_files:
            line += f"; {len(self.token_files)} runtime file(s) still hold its token"
        return line


def _run_dirs(found: Owned, left: StackState | None) -> list[Path]:
    dirs = [found.stack_dir / RUN_SUBDIR]
    if left is not None and left.run_dir and Path(left.run_dir) not in dirs:
        dirs.append(Path(left.run_dir))
    return dirs


def _left_behind_by(state_dir: Path) -> tuple[Owned, StackState | None] | None:
    found = _load(state_dir)
    if found is None or owners.alive(found.owner):
        return None
    try:
        left = state_file.load(found.stack_dir)
    except StackError:
        left = None  # an unreadable state file names no process: only runtime files can be left
    return found, left


def left_behind() -> list[LeftBehind]:
    """Every Reef on this machine whose owning job is dead and that still runs or left its token."""
    found = []
    for state_dir in owner_index.state_dirs():
        dead = _left_behind_by(state_dir)
        if dead is None:
            continue
        owned, left = dead
        recorded = [] if left is None or left.reused else left.processes
        living = tuple(p for p in recorded if processes.alive(p))
        tokens = tuple(f for d in _run_dirs(owned, left) for f in reef_run_dir.resolved_configs(d))
        if living or tokens:
            found.append(LeftBehind(state_dir, owned, living, tokens))
    return found


def stop_left_behind(console: Console) -> list[LeftBehind]:
    """Stop every Reef whose owning job is dead and remove its runtime files; returns them."""
    stopped = left_behind()
    for state_dir in owner_index.state_dirs():
        if _load(state_dir) is None:
            owner_index.remove(state_dir)  # the record went with its job's clean end
            continue
        with _lock(state_dir):
            dead = _left_behind_by(state_dir)
            if dead is not None:
                _stop(state_dir, *dead, console)
    for orphan in stopped:
        for path in orphan.token_files:
            console.print(f"reef-stack: removed {path} (it held the token)")
    return stopped


def doctor_check() -> Finding:
    """`atoll doctor`'s row: a warning naming each Reef a killed job left behind."""
    left = left_behind()
    if not left:
        return Finding("orphan-reefs", True, "no Reef left behind by a killed job", "")
    return Finding(
        "orphan-reefs",
        False,
        "; ".join(orphan.describe() for orphan in left),
        "`atoll stack down --orphans`",
        warning=True,
    )
