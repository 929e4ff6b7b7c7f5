"""`atoll suite run`: one search per task, in turn, each an ordinary `atoll run`.

The suite is a thin wrapper, not a second runner: for each task it runs
exactly the command a user would type,

    atoll run -y --task NAME --agent guidance-ttt -o OUT/NAME/jobs \\
        --ak steps=N --ak state_dir=OUT/NAME/state [--env ENV] [--ak K=V ...] [--ae K=V ...]

and then reads what that trial left: the verifier's raw score of the program
the search handed in (the best found, as the task's own verifier says), the
agent's seed and best raw scores and its committed steps. The task's
published records come from its task.toml (`records`). After each task the
suite's record (`OUT/suite.json`) is written atomically, so a suite that was
stopped continues where it was with the same command: a task whose search
already reached N steps is not run again, and any other is run again with its
state directory, where Guidance-TTT resumes its search (`steps` is the final
total). A changed agent, environment or `--ak`/`--ae` is refused: those are
the searches' identity.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json
from atoll.discovery.records import RecordsError, task_facts

__all__ = [
    "OWNED_KWARGS",
    "SUITE_FILE",
    "SuiteError",
    "SuiteSettings",
    "run_suite",
    "run_task",
    "trial_record",
]

SUITE_FILE = "suite.json"
SCHEMA = "atoll.discovery.suite/1"
OWNED_KWARGS = ("steps", "state_dir")  # the suite sets these for every task
DONE = "done"
FAILED = "failed"
INTERRUPTED = "interrupted"


class SuiteError(ValueError):
    """The suite cannot run as asked; the message says what to change."""


@dataclass(frozen=True)
class SuiteSettings:
    """What every task's `atoll run` gets: the searches' identity, and the steps to reach."""

    steps: int
    agent: str = "guidance-ttt"
    env: str | None = None
    agent_kwargs: tuple[str, ...] = ()
    agent_env: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise SuiteError(f"--steps must be at least 1, not {self.steps}")
        for pair in self.agent_kwargs:
            key, sep, _ = pair.partition("=")
            if not sep or not key.strip():
                raise SuiteError(f"--ak {pair!r}: expected KEY=VALUE")
            if key.strip() in OWNED_KWARGS:
                raise SuiteError(
                    f"--ak {key.strip()}=...: the suite sets {' and '.join(OWNED_KWARGS)} "
                    "itself (use --steps; each task's state is OUT/NAME/state)"
                )

    def identity(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "env": self.env,
            "agent_kwargs": list(self.agent_kwargs),
            "agent_env": list(self.agent_env),
        }


@dataclass
class SuiteRecord:
    """OUT/suite.json: the suite's identity and each task's outcome so far."""

    identity: dict[str, Any]
    steps: int
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "identity": self.identity,
            "steps": self.steps,
            "tasks": self.tasks,
        }


def load_record(out: Path, settings: SuiteSettings) -> SuiteRecord:
    """The suite in `out`, or a new one; a suite started with other settings is refused."""
    path = out / SUITE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return SuiteRecord(settings.identity(), settings.steps)
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SuiteError(f"{path}: not a suite record ({SCHEMA})")
    if data["identity"] != settings.identity():
        raise SuiteError(
            f"{out} holds a suite started with {json.dumps(data['identity'])}; "
            "resume it with the same --agent, --env, --ak and --ae, or use another --out"
        )
    return SuiteRecord(data["identity"], settings.steps, dict(data.get("tasks", {})))


def run_command(name: str, out: Path, settings: SuiteSettings) -> list[str]:
    """The `atoll run` of one task, as a user would type it (with this Python's atoll)."""
    argv = [sys.executable, "-m", "atoll.core.cli", "run", "-y", "--task", name]
    argv += ["--agent", settings.agent, "-o", str(out / name / "jobs")]
    if settings.env:
        argv += ["--env", settings.env]
    argv += ["--ak", f"steps={settings.steps}", "--ak", f"state_dir={out / name / 'state'}"]
    for pair in settings.agent_kwargs:
        argv += ["--ak", pair]
    for pair in settings.agent_env:
        argv += ["--ae", pair]
    return argv


def trial_record(jobs: Path, since: float) -> dict[str, Any] | None:
    """What the newest trial under `jobs` (finished after `since`) says, or None if none did."""
    found = [p for p in jobs.glob("*/*/result.json") if p.stat().st_mtime >= since]
    if not found:
        return None
    path = max(found, key=lambda p: p.stat().st_mtime)
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    metadata = (result.get("agent_result") or {}).get("metadata") or {}
    failure = result.get("exception_info")
    return {
        "trial": str(path.parent),
        "reward": rewards.get("reward"),
        "best_score": rewards.get("raw_score"),
        "search_best_score": metadata.get("best_raw_score"),
        "search_seed_score": metadata.get("seed_raw_score"),
        "steps_done": metadata.get("steps"),
        "error": None
        if failure is None
        else f"{failure.get('exception_type')}: {failure.get('exception_message', '')}"[:500],
    }


def run_task(
    name: str,
    task_dir: Path,
    out: Path,
    settings: SuiteSettings,
    *,
    runner: Callable[[list[str]], int],
) -> dict[str, Any]:
    """Search one task with `atoll run`; its record for suite.json."""
    facts = task_facts(task_dir)
    (out / name).mkdir(parents=True, exist_ok=True)
    argv = run_command(name, out, settings)
    started = time.time() - 1.0  # file times may be coarser than the clock
    code = runner(argv)
    trial = trial_record(out / name / "jobs", started) or {}
    seed = trial.get("search_seed_score")
    record: dict[str, Any] = {
        "task_dir": str(task_dir),
        "command": argv[3:],  # after `python -m atoll.core.cli`: what `atoll` was given
        "exit_code": code,
        "direction": facts.direction,
        "raw_score_label": facts.raw_score_label,
        "seed_score": facts.seed_score if seed is None else seed,
        "records": [r.to_json() for r in facts.records],
        **trial,
    }
    done = code == 0 and trial.get("best_score") is not None and not trial.get("error")
    record["status"] = DONE if done else FAILED
    if not done and not record.get("error"):
        record["error"] = f"atoll run exited with status {code} and left no verified trial"
    return record


def finished(record: dict[str, Any] | None, steps: int) -> bool:
    """Whether a task's saved record already holds a verified search of `steps` steps."""
    if not record or record.get("status") != DONE:
        return False
    done = record.get("steps_done")
    return isinstance(done, int) and done >= steps


def run_suite(
    tasks: Sequence[tuple[str, Path]],
    out: Path,
    settings: SuiteSettings,
    *,
    runner: Callable[[list[str]], int] | None = None,
    say: Callable[[str], None] = print,
) -> SuiteRecord:
    """Search each task in turn (skipping those already searched to the steps); the record."""
    out.mkdir(parents=True, exist_ok=True)
    suite = load_record(out, settings)
    for _, task_dir in tasks:  # every task's records readable before any search starts
        try:
            task_facts(task_dir)
        except RecordsError as exc:
            raise SuiteError(str(exc)) from None
    run = runner or _run_child
    for name, task_dir in tasks:
        if finished(suite.tasks.get(name), settings.steps):
            say(f"suite: {name}: already searched to {settings.steps} step(s); kept")
            continue
        say(f"suite: {name}: atoll run ({settings.steps} step(s) in all)")
        try:
            suite.tasks[name] = run_task(name, task_dir, out, settings, runner=run)
        except KeyboardInterrupt:
            suite.tasks[name] = {**suite.tasks.get(name, {}), "status": INTERRUPTED}
            atomic_write_json(out / SUITE_FILE, suite.to_json())
            raise
        atomic_write_json(out / SUITE_FILE, suite.to_json())
        say(f"suite: {name}: {describe(suite.tasks[name])}")
    return suite


def describe(record: dict[str, Any]) -> str:
    if record.get("status") != DONE:
        return f"{record.get('status')}: {record.get('error')}"
    return (
        f"best {record['best_score']!r} after {record.get('steps_done')} step(s) "
        f"(seed {record.get('seed_score')!r})"
    )


def _run_child(argv: list[str]) -> int:
    """The task's `atoll run`, its output on this terminal."""
    return subprocess.run(argv, check=False).returncode
