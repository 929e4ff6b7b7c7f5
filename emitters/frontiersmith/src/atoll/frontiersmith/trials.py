"""Fresh Harbor trials of a task directory, in-process, on the run's `--environment`.

Each execution check is a real Harbor trial (`Trial.create(...).run()`), the
same object `atoll run` drives, so a task that passes here is graded the
same way when a user runs it: its environment is built, the program goes
in through `solve.sh` as the agent, and the task's own verifier grades it
with the grader in `tests/`. Running trials in this process (not through
the `atoll` command) saves the command's start-up on every trial.

Every trial gets a worker receipt in the run's ledger before it starts
(environment, trial name, directory, and the Compose project a Docker
environment creates), closed when it ends; `cleanup` uses the receipts a
killed run left open.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.checker import JUDGE_ERROR, TIMEOUT  # the grader's per-case statuses
from atoll.core.ledger import Ledger

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # Harbor's litellm: no network

NOOP = "nop"
# How the grader reports, on stderr, a check of the task's own code that failed (no reward).
CHECKER_FAILURE = "checker error: self-check failed: "
LOG_TAIL = 4000  # characters of a failed verifier's output kept as evidence
ORACLE = "oracle"
PROGRAM_AGENT = "atoll.frontiersmith.program_agent:ProgramAgent"


class EnvironmentChoiceError(ValueError):
    """`--environment` names nothing Harbor or atoll knows."""


@dataclass(frozen=True)
class EnvironmentRef:
    """A Harbor environment, by type name or import path, as `--environment` named it."""

    name: str
    type: str | None = None
    import_path: str | None = None

    def config(self) -> dict[str, Any]:
        return {"type": self.type} if self.type else {"import_path": self.import_path}


def resolve_environment(name: str) -> EnvironmentRef:
    """`atoll-local` (or another registered environment), a Harbor type, or `module:Class`."""
    from harbor.models.environment_type import EnvironmentType

    from atoll.core.records import Kind
    from atoll.core.registry import load

    record = load().find(Kind.ENVIRONMENT, name)
    if record is not None:
        return EnvironmentRef(name, import_path=record.target)
    if ":" in name:
        return EnvironmentRef(name, import_path=name)
    types = {member.value for member in EnvironmentType}
    if name in types:
        return EnvironmentRef(name, type=name)
    known = sorted(set(load().names(Kind.ENVIRONMENT)) | types)
    raise EnvironmentChoiceError(
        f"unknown environment {name!r}; choose one of {', '.join(known)} or a module:Class path"
    )


def environment_choice(
    environment: EnvironmentRef, base_image: str, reason: str, language: str = "python"
) -> dict[str, str]:
    """What a worker receipt records of the environment: its name, what runs the programs, why.

    On atoll-local the host's python3 runs them (the interpreter's path), and
    for a C++ run the host's g++ compiles them (the compiler's path); on any
    other environment the bundle's own image does both.
    """
    import shutil

    choice = {"environment": environment.name, "reason": reason or "chosen with --environment"}
    if environment.name == "atoll-local":
        choice |= {"interpreter": shutil.which("python3") or "python3"}
        if language == "cpp":
            choice |= {"compiler": shutil.which("g++") or "g++"}
        return choice
    return choice | {"image": base_image}


@dataclass(frozen=True)
class CaseScore:
    score: float
    status: str
    feasible: bool
    detail: str = ""  # why the case failed, as the grader wrote it


@dataclass(frozen=True)
class TrialOutcome:
    """What one trial showed: the reward and per-case scores, or the infrastructure error."""

    label: str
    trial_name: str
    trial_dir: str
    seconds: float
    reward: float | None = None
    cases: list[CaseScore] = field(default_factory=list)
    error: str | None = None
    # cases that timed out in a first run, before this trial ran again alone
    timed_out_under_load: list[int] = field(default_factory=list)
    # the grader's own line when the task's code failed its check in the verifier (no reward):
    # evidence about the task, never an infrastructure error
    checker_failure: str = ""
    log_tail: str = ""  # the end of the verifier's output (stdout and stderr), when it failed

    @property
    def ok(self) -> bool:
        return self.error is None and self.reward is not None

    @property
    def scores(self) -> list[float]:
        return [c.score for c in self.cases]

    @property
    def timed_out(self) -> list[int]:
        """The cases that ran past their limits."""
        return [i for i, c in enumerate(self.cases) if c.status == TIMEOUT]

    @property
    def judge_errors(self) -> list[int]:
        """The cases on whose output the task's own scorer or validator failed."""
        return [i for i, c in enumerate(self.cases) if c.status == JUDGE_ERROR]

    @property
    def feasible_everywhere(self) -> bool:
        return bool(self.cases) and all(c.feasible for c in self.cases)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "trial_name": self.trial_name,
            "seconds": round(self.seconds, 3),
            "reward": self.reward,
            "scores": self.scores,
            "statuses": [c.status for c in self.cases],
            "feasible": [c.feasible for c in self.cases],
            "error": self.error,
            "timed_out_under_load": self.timed_out_under_load,
            "checker_failure": self.checker_failure,
        }


class HarborTrials:
    """Runs trials on one environment, at most `slots` at a time, with worker receipts."""

    def __init__(
        self,
        environment: EnvironmentRef,
        ledger: Ledger,
        *,
        slots: int,
        choice: dict[str, str] | None = None,
        local_roots: Path | None = None,
    ) -> None:
        self.environment = environment
        self.ledger = ledger
        # atoll-local: each trial's root in its own folder here, named in its receipt, so
        # `cleanup` removes exactly the root of a trial a killed run left.
        self.local_roots = local_roots if environment.name == "atoll-local" else None
        # Where the trials run, with what, and why: written into every worker receipt.
        self.choice = choice or environment_choice(environment, "", "")
        self._count = max(1, slots)
        self._slots = asyncio.Semaphore(self._count)
        self._exclusive = asyncio.Lock()  # one trial at a time may wait to run alone

    @contextlib.asynccontextmanager
    async def _slot(self, alone: bool) -> AsyncIterator[None]:
        """One slot, or (alone) every slot: no other trial of the run runs meanwhile."""
        if not alone:
            async with self._slots:
                yield
            return
        async with self._exclusive:
            taken = 0
            try:
                for _ in range(self._count):
                    await self._slots.acquire()
                    taken += 1
                yield
            finally:
                for _ in range(taken):
                    self._slots.release()

    async def run(
        self,
        task_dir: Path,
        trials_dir: Path,
        label: str,
        *,
        solution_dir: Path | None = None,
        agent: str | None = None,
        owner: str = "",
        alone: bool = False,
        agent_config: dict[str, Any] | None = None,
    ) -> TrialOutcome:
        """One fresh trial: `agent` (nop or oracle), the program in `solution_dir`, or any
        agent by its Harbor `AgentConfig` fields (`agent_config`, a rollout)."""
        from harbor.models.trial.config import (
            AgentConfig,
            EnvironmentConfig,
            TaskConfig,
            TrialConfig,
        )
        from harbor.trial.trial import Trial

        if agent_config is not None:
            chosen = AgentConfig(**agent_config)
        elif solution_dir is not None:
            chosen = AgentConfig(
                import_path=PROGRAM_AGENT,
                kwargs={"solution_dir": str(solution_dir), "task_dir": str(task_dir)},
            )
        else:
            chosen = AgentConfig(name=agent or ORACLE)
        name = f"{task_dir.name[:24]}__{label[:16]}__{secrets.token_hex(3)}"
        environment = self.environment.config()
        where: dict[str, str] = {}
        if self.local_roots is not None:
            where["local_root"] = str(self.local_roots / name)
            environment["kwargs"] = {"root_parent": where["local_root"]}
        config = TrialConfig(
            task=TaskConfig(path=task_dir),
            trial_name=name,
            trials_dir=trials_dir,
            agent=chosen,
            environment=EnvironmentConfig(**environment),
        )
        async with self._slot(alone):
            work = self.ledger.start_work(
                f"trial:{owner}:{label}",
                self.environment.name,
                name,
                {
                    "trial_dir": str(trials_dir / name),
                    "task_dir": str(task_dir),
                    "compose_project": f"{name}__env".lower(),
                    "environment_choice": self.choice,
                    **where,
                },
            )
            started = time.monotonic()
            try:
                trial = await Trial.create(config)
                result = await trial.run()
            except Exception as exc:  # Harbor failed before it could record a result
                _drop_empty(where.get("local_root"))
                seconds = time.monotonic() - started
                self.ledger.end_work(work, "error", {"error": f"{type(exc).__name__}: {exc}"})
                return TrialOutcome(label, name, str(trials_dir / name), seconds, error=_short(exc))
            seconds = time.monotonic() - started
            _drop_empty(where.get("local_root"))  # the trial's stop removed the root in it
        outcome = _read_outcome(label, name, trials_dir / name, seconds, result)
        self.ledger.end_work(
            work,
            "done" if outcome.ok else "error",
            {"reward": outcome.reward, "error": outcome.error, "seconds": round(seconds, 3)},
        )
        return outcome


def _drop_empty(folder: str | None) -> None:
    """Remove a trial's own root folder once its environment removed the root in it."""
    if folder:
        with contextlib.suppress(OSError):
            Path(folder).rmdir()


def _read_outcome(
    label: str, name: str, trial_dir: Path, seconds: float, result: Any
) -> TrialOutcome:
    from atoll.checker import CheckerError, read_scores

    base = functools.partial(TrialOutcome, label, name, str(trial_dir), seconds)
    if result.exception_info is not None:
        info = result.exception_info
        failure, log = _verifier_failure(trial_dir)
        return base(
            error=f"{info.exception_type}: {info.exception_message}"[:500],
            checker_failure=failure,
            log_tail=log,
        )
    rewards = (result.verifier_result.rewards or {}) if result.verifier_result else {}
    if "reward" not in rewards:
        failure, log = _verifier_failure(trial_dir)
        return base(error="the verifier wrote no reward", checker_failure=failure, log_tail=log)
    try:
        report = read_scores(trial_dir / "verifier" / "scores.json")
    except CheckerError as exc:
        return base(error=f"no per-case scores: {exc}")
    cases = [CaseScore(c.score, c.status, c.feasible, c.detail) for c in report.cases]
    judged = any(c.status == JUDGE_ERROR for c in cases)  # the task's code failed on an output
    log = verifier_log(trial_dir) if judged else ""
    return base(reward=float(rewards["reward"]), cases=cases, log_tail=log)


def verifier_log(trial_dir: Path, limit: int = LOG_TAIL) -> str:
    """The end of what the verifier printed (test.sh's stdout and stderr, in one file)."""
    path = trial_dir / "verifier" / "test-stdout.txt"
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - limit))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _verifier_failure(trial_dir: Path) -> tuple[str, str]:
    """(the grader's `CHECK: DETAIL` when the task's own code failed its check, else "";
    the end of the verifier's output)."""
    log = verifier_log(trial_dir)
    for line in reversed(log.splitlines()):
        if line.startswith(CHECKER_FAILURE):
            return line[len(CHECKER_FAILURE) :].strip(), log
    return "", log


def _short(exc: BaseException, limit: int = 500) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text[:limit]
