"""Everything a run journaled, rollout by rollout, read back without touching the run.

The trial's trajectory and the run explorer show each guidance call, each
executor call and each verdict, the open step's included, and they must
work on a run that is still going or was killed as well as on a finished
one. So this reads only files the run writes atomically or appends to with
a tolerated torn tail (the resume state, the step journals, the archive
snapshots), takes no lock and writes nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from atoll.guidance_ttt.search.archive import Archive, ArchiveError
from atoll.guidance_ttt.services.reef_guidance import GuidanceSample
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.durable_archive import LibraryError, peek
from atoll.guidance_ttt.state.run_dir import STEP_JOURNAL_SUFFIX, RunDir
from atoll.guidance_ttt.state.step_journal import (
    FailedCall,
    FinishedRollout,
    RolloutJournalError,
    StepState,
    read_step,
)

_JOURNAL_NAME = re.compile(rf"step-(\d{{5}}){re.escape(STEP_JOURNAL_SUFFIX)}")


class HistoryError(RuntimeError):
    """The state directory holds no run, or files of it cannot be read."""


@dataclass(frozen=True)
class SlotRecord:
    """One rollout slot of one step as far as it got.

    `sample`: the guidance answer (None when the call failed or is in flight);
    `failure`: the failed guidance call that is the slot's outcome;
    `finished`: the booked rollout (None while the executor or scorer works).
    """

    step: int
    group: int
    rollout: int
    parent_id: int | None
    sample: GuidanceSample | None
    failure: FailedCall | None
    finished: FinishedRollout | None


@dataclass(frozen=True)
class RunHistory:
    """A run's identity, its archive now, and every journaled slot in (step, group, rollout) order."""

    saved: resume.ResumeState
    committed_steps: int
    archive: Archive
    slots: tuple[SlotRecord, ...]
    journaled_steps: int

    @property
    def guidance_model(self) -> str:
        return str(self.saved.identity.get("guidance_model") or "guidance")

    @property
    def executor_model(self) -> str:
        return str(self.saved.identity.get("executor_model") or "executor")


def read_history(state_dir: Path) -> RunHistory:
    """The run in `state_dir` as its files say now; `HistoryError` in one line otherwise."""
    try:
        saved = resume.load(state_dir)
    except resume.ResumeError as exc:
        raise HistoryError(str(exc)) from None
    if saved is None:
        raise HistoryError(f"{state_dir}: no Guidance-TTT run was started here")
    paths = RunDir(state_dir)
    try:
        archive = peek(state_dir)
    except LibraryError as exc:
        raise HistoryError(str(exc)) from None
    states = [_read_step(path, step) for step, path in _journals(paths)]
    slots = tuple(slot for state in states for slot in _slots(state))
    return RunHistory(
        saved=saved,
        committed_steps=_committed_steps(paths),
        archive=archive,
        slots=slots,
        journaled_steps=len(states),
    )


def _journals(paths: RunDir) -> list[tuple[int, Path]]:
    """The step journals on disk, in step order (a run journals steps 0, 1, … in turn)."""
    if not paths.steps.is_dir():
        return []
    found = []
    for path in paths.steps.iterdir():
        match = _JOURNAL_NAME.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def _read_step(path: Path, step: int) -> StepState:
    try:
        return read_step(path, step)
    except RolloutJournalError as exc:
        raise HistoryError(str(exc)) from None


def _slots(state: StepState) -> list[SlotRecord]:
    keys = set(state.finished) | set(state.samples) | set(state.failed_calls)
    return [
        SlotRecord(
            step=state.step,
            group=group,
            rollout=rollout,
            parent_id=state.selections.get(group),
            sample=state.samples.get((group, rollout)),
            failure=state.failed_calls.get((group, rollout)),
            finished=state.finished.get((group, rollout)),
        )
        for group, rollout in sorted(keys)
    ]


def _committed_steps(paths: RunDir) -> int:
    """How many steps the committed archive holds (0 before the first commit)."""
    path = paths.committed_archive
    try:
        data = json.loads(path.read_bytes())
        return int(data["archive"]["step"])
    except FileNotFoundError:
        return 0
    except (OSError, ValueError, KeyError, TypeError, ArchiveError) as exc:
        raise HistoryError(f"{path}: cannot be read ({exc})") from None
