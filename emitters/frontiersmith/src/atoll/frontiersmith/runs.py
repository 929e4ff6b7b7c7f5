"""Where a run keeps its state, and how a later command finds it again.

`--out DIR` holds one collection: the emitted tasks under `DIR/tasks/`, the
report (`DIR/report.md`, `DIR/run.json`, `DIR/plots/`), and the run's own
state under `DIR/runs/RUN_ID/` — the ledger with every receipt, the
configuration and fingerprint, one outcome file per finished seed, and each
candidate's working files. Receipts, raw answers and scores never enter a
task directory.

A run id is the start time plus the fingerprint's first characters. Each
run is also listed in the user's state directory (id -> DIR), so that
`atoll emit frontiersmith reconcile RUN_ID` finds it without `--out`. One
process at a time owns a run (`atoll.core.run_lock` on `lock` in its directory,
`lock.holder.json` naming the holder).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core import run_lock
from atoll.core.durable import atomic_write_json, atomic_write_text
from atoll.core.user_dirs import state_dir
from atoll.frontiersmith.config import RunConfig

RUN_FILE = "run-config.json"
SEEDS_FILE = "seeds.jsonl"  # the seeds' full text, as the run read them
RUN_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{8}")


class RunError(Exception):
    """A run that cannot be started, found or resumed as asked."""


@dataclass(frozen=True)
class RunDir:
    out: Path
    run_id: str

    @property
    def root(self) -> Path:
        return self.out / "runs" / self.run_id

    @property
    def ledger_path(self) -> Path:
        return self.root / "ledger.sqlite"

    @property
    def config_path(self) -> Path:
        return self.root / RUN_FILE

    @property
    def seeds_path(self) -> Path:
        return self.root / SEEDS_FILE

    @property
    def outcomes_dir(self) -> Path:
        return self.root / "seeds"

    @property
    def work_dir(self) -> Path:
        return self.root / "work"

    @property
    def events_path(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def tasks_dir(self) -> Path:
        return self.out / "tasks"

    @property
    def dropped_dir(self) -> Path:
        """Where `--population` moves the accepted tasks it drops (kept whole, not deleted)."""
        return self.out / "dropped"

    @property
    def rounds_dir(self) -> Path:
        """`--rounds`: one record per closed round (its population, the next round's seeds)."""
        return self.root / "rounds"

    def seed_work(self, seed_id: str) -> Path:
        return self.work_dir / seed_id

    def lock(self) -> run_lock.Lock:
        """Held for as long as a process works on the run; a second one is refused."""
        try:
            return run_lock.acquire(self.root / "lock", what=f"run {self.run_id} ({self.root})")
        except run_lock.RunDirInUse as exc:
            raise RunError(str(exc)) from None

    def stored(self) -> dict[str, Any]:
        try:
            stored = json.loads(self.config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunError(f"run {self.run_id} has no readable {RUN_FILE}: {exc}") from None
        if not isinstance(stored, dict):
            raise RunError(f"run {self.run_id}'s {RUN_FILE} is not a JSON object")
        return stored

    def stored_config(self) -> RunConfig:
        return RunConfig.from_json(self.stored()["config"])

    def write_outcome(self, seed_id: str, outcome: dict[str, Any]) -> None:
        atomic_write_json(self.outcomes_dir / f"{seed_id}.json", outcome, make_parents=True)

    def outcomes(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        if self.outcomes_dir.is_dir():
            for path in sorted(self.outcomes_dir.glob("*.json")):
                data = json.loads(path.read_text(encoding="utf-8"))
                found[data["seed_id"]] = data
        return found

    def log_event(self, event: dict[str, Any]) -> None:
        """One line of the run's structured log (appended; a torn last line is harmless)."""
        line = json.dumps({"t": round(time.time(), 3), **event}, sort_keys=True)
        with self.events_path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def resume_command(run: RunDir) -> str:
    """The command that resumes `run`, exactly as it can be typed (it names the output directory)."""
    import shlex

    return (
        f"atoll emit frontiersmith --resume {run.run_id} "
        f"--out {shlex.quote(str(run.out.resolve()))}"
    )


def new_run_id(fingerprint: str) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + fingerprint[:8]


def create_run(
    out: Path,
    config: RunConfig,
    fingerprint: str,
    code_hash: str,
    *,
    code: dict[str, Any] | None = None,
    seeds: list[dict[str, Any]] | None = None,
) -> RunDir:
    """A new run in `out`, which must not already hold one.

    The run directory keeps the campaign's record: its settings, the code it
    ran (`code`: every atoll package's hash, Harbor's and Python's versions)
    and the seeds' full text (`seeds.jsonl`), not only their hash.
    """
    existing = existing_runs(out)
    if existing:
        raise RunError(
            f"{out} already holds run {existing[0]}; resume it with --resume {existing[0]}, "
            "or choose another --out"
        )
    run = RunDir(out, new_run_id(fingerprint))
    run.root.mkdir(parents=True, exist_ok=False)
    atomic_write_json(
        run.config_path,
        {
            "run_id": run.run_id,
            "fingerprint": fingerprint,
            "code_hash": code_hash,
            "created_at": time.time(),
            "config": config.to_json(),
            "code": code or {},
        },
    )
    if seeds is not None:
        atomic_write_text(
            run.seeds_path, "".join(json.dumps(s, sort_keys=True) + "\n" for s in seeds)
        )
    remember(run)
    return run


def existing_runs(out: Path) -> list[str]:
    runs = out / "runs"
    if not runs.is_dir():
        return []
    return sorted(p.name for p in runs.iterdir() if (p / RUN_FILE).is_file())


def open_run(run_id: str, out: Path | None) -> RunDir:
    """An existing run by id, in `out` or wherever the index says it is."""
    if not RUN_ID.fullmatch(run_id):
        raise RunError(f"{run_id!r} is not a run id (they look like 20250101-120000-0123abcd)")
    candidates = [out] if out is not None else []
    indexed = _index_lookup(run_id)
    if out is None and indexed is not None:
        candidates.append(indexed)
    if out is None:
        candidates.append(Path.cwd())
    for where in candidates:
        run = RunDir(where, run_id)
        if run.config_path.is_file():
            return run
    place = f"in {out}" if out is not None else "in the run index or the current directory"
    raise RunError(f"no run {run_id} {place}; pass --out DIR with the run's output directory")


def state_home() -> Path:
    """The user's index of runs, in atoll's state directory (`atoll.core.user_dirs`)."""
    return state_dir("frontiersmith", "runs")


def remember(run: RunDir) -> None:
    """List the run in the user's index; a failure to do so only costs `--out` later."""
    with contextlib.suppress(OSError):
        atomic_write_json(
            state_home() / f"{run.run_id}.json",
            {"run_id": run.run_id, "out": str(run.out.resolve())},
            make_parents=True,
        )


def _index_lookup(run_id: str) -> Path | None:
    try:
        data = json.loads((state_home() / f"{run_id}.json").read_text(encoding="utf-8"))
        return Path(data["out"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
