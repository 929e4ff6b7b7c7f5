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
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.console import Console

from atoll.core.durable import atomic_write_bytes
from atoll.core.sandbox import owners
from atoll.stack import processes, reef_run_dir
from atoll.stack import state as state_file
from atoll.stack.render import RUN_SUBDIR

RECORD = "reef-stack-owner.json"


@dataclass(frozen=True)
class Owned:
    owner: str
    stack_dir: Path
    reef_url: str


def record_path(state_dir: Path) -> Path:
    return state_dir / RECORD


def record(state_dir: Path, stack_dir: Path, reef_url: str) -> None:
    """Note that this process owns the Reef started from `stack_dir`."""
    data = {"owner": owners.own_tag(), "stack_dir": str(stack_dir), "reef_url": reef_url}
    atomic_write_bytes(record_path(state_dir), json.dumps(data).encode() + b"\n", make_parents=True)


def release(state_dir: Path) -> None:
    """Drop this process's record (the Reef it owned has been stopped)."""
    found = _load(state_dir)
    if found is not None and found.owner == owners.own_tag():
        record_path(state_dir).unlink(missing_ok=True)


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
    left = state_file.load(found.stack_dir)
    run_dir = found.stack_dir / RUN_SUBDIR
    if left is not None and not left.reused:
        living = [p for p in left.processes if processes.alive(p)]
        if living and accepts(left.reef_url, token):
            left.run_dir = str(Path(left.run_dir or run_dir))
            if found.stack_dir != stack_dir:
                state_file.save(stack_dir, left)
                state_file.clear(found.stack_dir)
            record(state_dir, stack_dir, left.reef_url)
            console.print(
                f"reef-stack: adopted the Reef at {left.reef_url} that a killed job left "
                "running; it stops at this job's end"
            )
            return
        if living:
            processes.stop(left.processes, grace=10.0)
            console.print(
                f"reef-stack: stopped the Reef at {left.reef_url} that a killed job left running"
            )
        state_file.clear(found.stack_dir)
        if left.run_dir:
            reef_run_dir.remove_resolved_configs(Path(left.run_dir))
    reef_run_dir.remove_resolved_configs(run_dir)
    record_path(state_dir).unlink(missing_ok=True)
