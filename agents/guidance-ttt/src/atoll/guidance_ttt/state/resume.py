"""The resume state of a run: who it is, how far it got, and what each step did.

`resume-state.json` is what lets a stopped run continue as the same run: the
settings that define it (a resume with different ones would mix two
experiments in one archive and one trained adapter), the training mode (a
search-only run never silently becomes a trained one, or back), the run id
that makes report ids unique, the Reef scenario derived from it (two runs
against one Reef never share a training grid, and a resume keeps training
the same one), the task's scorer and a digest of its contract (a candidate
scored one way is not comparable with one scored another, and the prompts
say what the contract says) and of its grader, `tests/` (a changed grader
scores the same program differently), the judge that scores it (see
`judge_change`), and the per-step summaries. It holds no credential. The
committed archive, not this file, says which step is next; this file may lag
by the one step whose commit it was about to record.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json
from atoll.guidance_ttt.config import GuidanceConfig, IdentityChanged
from atoll.guidance_ttt.contract import GRADER_DIGEST, Task
from atoll.guidance_ttt.search.step import StepSummary
from atoll.guidance_ttt.state.run_dir import RunDir

FORMAT = "atoll.guidance_ttt.resume/1"
SCENARIO_PREFIX = "guidance-ttt"
# The judge in a run's identity: atoll.judge's `JudgeRecord` as JSON, plus `since_step`.
JUDGE = "judge"
JUDGE_FIELDS = ("kind", "address", "version")
# atoll.judge's variable, spelled here: reading a state directory loads no judge.
JUDGE_URL_ENV = "FRONTIERCS_JUDGE_URL"

# Which judge scores a run (`JudgeRecord.to_json()`); None when the task's scorer is no judge.
Judge = Mapping[str, Any] | None


class ResumeError(RuntimeError):
    """The resume state is unreadable or does not fit this run."""


@dataclass
class ResumeState:
    run_id: str
    scenario: str
    training: str
    identity: dict[str, Any]
    next_step: int
    summaries: list[StepSummary] = field(default_factory=list)
    # Task.identity() at the first start; None in a state saved before it was kept, and no
    # grader digest in one saved before that was kept (each then resumes unchecked on it).
    task: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "run_id": self.run_id,
            "scenario": self.scenario,
            "training": self.training,
            "identity": self.identity,
            "next_step": self.next_step,
            "summaries": [s.to_json() for s in self.summaries],
            **({} if self.task is None else {"task": self.task}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResumeState:
        if data.get("format") != FORMAT:
            raise ResumeError(
                f"resume state has format {data.get('format')!r}, expected {FORMAT!r}"
            )
        try:
            return cls(
                run_id=str(data["run_id"]),
                scenario=str(data["scenario"]),
                training=str(data["training"]),
                identity=dict(data["identity"]),
                next_step=int(data["next_step"]),
                summaries=[StepSummary.from_json(s) for s in data.get("summaries", [])],
                task=None if data.get("task") is None else dict(data["task"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ResumeError(f"resume state is incomplete: {exc}") from None

    def check(
        self, config: GuidanceConfig, training: str, name: RunName, task: Task, judge: Judge = None
    ) -> None:
        """Refuse to continue a run whose defining settings changed, naming its state directory.

        `judge` is the judge the resume would score with (None: the task's scorer is no judge).
        """
        change = config.identity_change(self.identity)
        if change is None:
            change = self.task_change(task)
        if change is None and training != self.training:
            change = f"training mode changed from {self.training!r} to {training!r}"
        if change is None and name.scenario != self.scenario:
            change = f"Reef scenario changed from {self.scenario!r} to {name.scenario!r}"
        if change is None and name.run_id != self.run_id:
            change = f"run id changed from {self.run_id!r} to {name.run_id!r}"
        if change is not None:
            raise IdentityChanged(_refusal(change, config.state_dir))
        self.check_judge(judge, config.state_dir)

    def check_judge(self, judge: Judge, state_dir: Path) -> None:
        """Refuse, in one line, a resume that would score with another judge than the run's.

        A state saved before judges were recorded holds none: it resumes, and
        `adopt_judge` records the judge it resumes with.
        """
        if JUDGE not in self.identity:
            return
        saved = self.identity[JUDGE]
        change = judge_change(saved, judge)
        if change is not None:
            raise IdentityChanged(
                f"cannot resume: {change} in state dir {state_dir}; {_judge_remedy(saved)}"
            )

    def adopt_judge(self, judge: Judge) -> bool:
        """Record `judge` in a state saved before judges were; True if it had none.

        Which judge scored its steps so far is unknown (the embedded one or any
        URL), so none is claimed for them: `since_step` says from which step on
        the record holds, and every later resume is checked against it.
        """
        if JUDGE in self.identity:
            return False
        self.identity[JUDGE] = judge_record(judge, since_step=self.next_step)
        return True

    def task_change(self, task: Task) -> str | None:
        """How the task's scorer, contract or grader differs from the first start; None if not."""
        if self.task is None:
            return None
        current = task.identity()
        if self.task.get("scorer") != current["scorer"]:
            return f"the task's scorer changed from {self.task.get('scorer')!r} to {current['scorer']!r}"
        if self.task.get("contract_sha256") != current["contract_sha256"]:
            return "the task's contract.json changed since the run started"
        kept = self.task.get(GRADER_DIGEST)
        if kept is not None and kept != current.get(GRADER_DIGEST):
            return "the task's grader (its tests/) changed since the run started"
        return None

    def check_task(self, task: Task, state_dir: Path) -> None:
        """The task part of `check`, for a caller that has not built the run's services yet."""
        change = self.task_change(task)
        if change is not None:
            raise IdentityChanged(_refusal(change, state_dir))


def judge_record(judge: Judge, since_step: int = 0) -> dict[str, Any] | None:
    """The identity's `judge`: which judge scores, and the first step it scored."""
    if judge is None:
        return None
    return {**{name: judge.get(name) for name in JUDGE_FIELDS}, "since_step": since_step}


def judge_change(saved: Judge, current: Judge) -> str | None:
    """How the judge differs from the saved one (kind, address or version); None if it does not.

    Scores from two judges are two rulers: an archive ranked, and an adapter
    trained, by both would compare numbers that do not compare.
    """
    if _judge_fields(saved) == _judge_fields(current):
        return None
    return f"the judge changed from {describe_judge(saved)} to {describe_judge(current)}"


def describe_judge(judge: Judge) -> str:
    """A judge as a log line or a refusal names it."""
    if judge is None:
        return "none (the task's scorer is no judge)"
    version = f"(version {judge.get('version') or 'unknown'})"
    if judge.get("kind") == "embedded":
        return f"the embedded judge {version}"
    return f"the judge at {judge.get('address')} {version}"


def _judge_fields(judge: Judge) -> tuple[Any, ...] | None:
    return None if judge is None else tuple(judge.get(name) for name in JUDGE_FIELDS)


def _judge_remedy(saved: Judge) -> str:
    """What to do instead: score with the saved judge again, or start afresh."""
    if saved is None:
        how = "resume with the task's scorer the run started with"
    elif saved.get("kind") == "embedded":
        how = (
            f"resume with the embedded judge (atoll-frontiercs-judge {saved.get('version')} "
            f"installed, {JUDGE_URL_ENV} unset or naming an embedded judge)"
        )
    else:
        how = f"resume with {JUDGE_URL_ENV}={saved.get('address')} serving that judge"
    return f"{how}, or start a new state directory"


def _refusal(change: str, state_dir: Path) -> str:
    return (
        f"cannot resume: {change} in state dir {state_dir}; "
        "start a new state directory or restore the old settings"
    )


@dataclass(frozen=True)
class RunName:
    """What names a run outside its state directory: report ids and the Reef scenario."""

    run_id: str
    scenario: str

    @classmethod
    def new(cls) -> RunName:
        run_id = uuid.uuid4().hex[:12]
        return cls(run_id, f"{SCENARIO_PREFIX}-{run_id}")


@dataclass(frozen=True)
class RunStart:
    """What a start reads of its state directory, once, and hands down to the controller.

    `saved` is the resume state (None for a first start), read before any
    service starts; `name` is its run id and Reef scenario, or a new name
    for a first start, which the guidance client and the training barrier
    are built for.
    """

    saved: ResumeState | None
    name: RunName


def read_start(state_dir: Path) -> RunStart:
    """The resume state of the run in `state_dir` and the run's name, read once."""
    saved = load(state_dir)
    name = RunName.new() if saved is None else RunName(saved.run_id, saved.scenario)
    return RunStart(saved, name)


def run_name(state_dir: Path) -> RunName:
    """The name of the run in `state_dir`: the saved one, or a new one for a first start.

    A new name is saved by the run's first start; a start that fails before
    that leaves nothing behind, and the next start chooses afresh.
    """
    return read_start(state_dir).name


def resume_path(state_dir: Path) -> Path:
    return RunDir(state_dir).resume_state


def load(state_dir: Path) -> ResumeState | None:
    """The saved state, or None for a state directory where no run started."""
    path = resume_path(state_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise ResumeError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise ResumeError(f"{path} is not a JSON object")
    return ResumeState.from_json(data)


def save(state_dir: Path, state: ResumeState) -> None:
    atomic_write_json(resume_path(state_dir), state.to_json())


def summary_path(state_dir: Path, step: int) -> Path:
    return RunDir(state_dir).step_summary(step)


def save_summary(state_dir: Path, summary: StepSummary) -> None:
    atomic_write_json(summary_path(state_dir, summary.step), summary.to_json())


def catch_up(state_dir: Path, state: ResumeState, committed_step: int) -> None:
    """Bring `state` level with the committed archive (a crash may have cut its last update)."""
    if committed_step < state.next_step:
        raise ResumeError(
            f"the committed archive is at step {committed_step} but the resume state says "
            f"step {state.next_step} was committed; the state directory is inconsistent"
        )
    known = {s.step for s in state.summaries}
    for step in range(state.next_step, committed_step):
        path = summary_path(state_dir, step)
        if step not in known:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise ResumeError(f"summary of committed step {step} is missing: {exc}") from None
            state.summaries.append(StepSummary.from_json(data))
    state.next_step = committed_step
