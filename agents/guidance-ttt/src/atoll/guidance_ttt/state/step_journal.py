"""The per-step rollout journal: what Reef has seen of each rollout, durable as it happens.

Reef fills each (step, group, rollout) slot with the first report it gets and
never replaces it, so a step interrupted halfway must be finished, not
sampled afresh. Every fact that Reef could know about a rollout is appended
here (fsync'd) before the run acts on it: that a guidance call is about to be
sent, the receipt and guidance it returned, the finished rollout with the
exact report body, and Reef's acknowledgement of the report. A resume reads
the journal back as `StepState`: finished rollouts are reused, a receipt
without a result is continued from the executor on, a guidance call that
failed is booked as its slot's failed rollout (never sent again),
unacknowledged reports are re-posted with the same id, and guidance calls
whose answer was lost are named as orphans (Reef may hold an inference nobody
will report on). A call a crash cut off left no outcome at all: it is named
as an orphan too, and the resumed run sends its slot's call again. A failed
call that was granted its slot's one re-send (`resent`, see `search.step`) is
not the slot's outcome; the grant is in the same durable line as the failure,
so a resume sends the granted call if it was never sent and grants no other.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.guidance_ttt.search.archive import Rollout
from atoll.guidance_ttt.services.reef_guidance import GuidanceSample
from atoll.guidance_ttt.state.jsonl_journal import Journal, JournalCorrupt, read_journal
from atoll.guidance_ttt.state.run_dir import step_journal_path

Slot = tuple[int, int]


class RolloutJournalError(RuntimeError):
    """The step journal is damaged or contradicts the run."""


@dataclass(frozen=True)
class FinishedRollout:
    """A rollout whose result is final: what the archive booked and what Reef is told."""

    rollout: Rollout
    receipt: str | None  # None: the guidance call failed without one; nothing to report against
    child_id: int | None
    report: dict[str, Any]
    executor: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rollout": self.rollout.to_json(),
            "receipt": self.receipt,
            "child_id": self.child_id,
            "report": self.report,
            "executor": self.executor,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FinishedRollout:
        return cls(
            rollout=Rollout.from_json(data["rollout"]),
            receipt=None if data.get("receipt") is None else str(data["receipt"]),
            child_id=None if data.get("child_id") is None else int(data["child_id"]),
            report=dict(data["report"]),
            executor=data.get("executor"),
        )


@dataclass(frozen=True)
class Orphan:
    """A guidance call whose answer never reached the run; Reef may have recorded it."""

    group: int
    rollout: int
    attempt: int
    started_at: float
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "rollout": self.rollout,
            "attempt": self.attempt,
            "started_at": self.started_at,
            "error": self.error,
        }


@dataclass(frozen=True)
class FailedCall:
    """A guidance call that ended without a sample; its slot is a failed rollout.

    `resent`: the slot's one re-send was granted after it, so it is not the
    slot's outcome.
    """

    attempt: int
    error: str
    receipt: str | None
    resent: bool = False


@dataclass
class StepState:
    """A step's journal read back: the basis of a resume."""

    step: int
    selections: dict[int, int] = field(default_factory=dict)
    samples: dict[Slot, GuidanceSample] = field(default_factory=dict)
    finished: dict[Slot, FinishedRollout] = field(default_factory=dict)
    finish_order: list[Slot] = field(default_factory=list)
    acknowledged: set[Slot] = field(default_factory=set)
    attempts: dict[Slot, int] = field(default_factory=dict)
    failed_calls: dict[Slot, FailedCall] = field(default_factory=dict)
    # Slots whose one guidance re-send was granted (it may still be unsent, after a crash).
    resends: set[Slot] = field(default_factory=set)
    orphans: list[Orphan] = field(default_factory=list)

    def unacknowledged(self) -> list[FinishedRollout]:
        """Finished rollouts with a receipt whose report Reef has not acknowledged."""
        return [
            self.finished[s]
            for s in self.finish_order
            if s not in self.acknowledged and self.finished[s].receipt is not None
        ]

    def unreported(self) -> list[FinishedRollout]:
        """Finished rollouts Reef can never hear of: their guidance call left no receipt."""
        return [self.finished[s] for s in self.finish_order if self.finished[s].receipt is None]


def read_step(path: Path, step: int) -> StepState:
    """Fold a step journal into its state; an absent journal is an untouched step."""
    try:
        records = read_journal(path).records
    except JournalCorrupt as exc:
        raise RolloutJournalError(str(exc)) from None
    state = StepState(step)
    pending: dict[tuple[int, int, int], dict[str, Any]] = {}
    for record in records:
        kind = record.get("kind")
        if record.get("step") != step:
            raise RolloutJournalError(
                f"{path}: a record of step {record.get('step')} in step {step}"
            )
        slot = (int(record.get("group", -1)), int(record.get("rollout", -1)))
        if kind == "selection":
            state.selections[int(record["group"])] = int(record["node_id"])
        elif kind == "attempt":
            attempt = int(record["attempt"])
            state.attempts[slot] = max(state.attempts.get(slot, 0), attempt)
            pending[(*slot, attempt)] = record
        elif kind == "attempt_failed":
            started = pending.pop((*slot, int(record["attempt"])), None)
            if record.get("answer_lost"):
                state.orphans.append(_orphan(slot, record, started, record.get("error")))
            if record.get("resent"):
                state.resends.add(slot)
            elif not record.get("cancelled"):
                state.failed_calls[slot] = FailedCall(
                    int(record["attempt"]), str(record.get("error") or ""), record.get("receipt")
                )
        elif kind == "guidance":
            pending.pop((*slot, int(record["attempt"])), None)
            state.samples[slot] = GuidanceSample.from_json(record["sample"])
        elif kind == "finished":
            if slot in state.finished:
                raise RolloutJournalError(f"{path}: slot {slot} finished twice")
            state.finished[slot] = FinishedRollout.from_json(record["finished"])
            state.finish_order.append(slot)
        elif kind == "acknowledged":
            state.acknowledged.add(slot)
        else:
            raise RolloutJournalError(f"{path}: unknown record kind {kind!r}")
    # A call that started and left no trace at all was cut off by a crash.
    for (group, rollout, attempt), record in pending.items():
        state.orphans.append(
            _orphan((group, rollout), {"attempt": attempt}, record, "interrupted by a crash")
        )
    state.orphans.sort(key=lambda o: (o.group, o.rollout, o.attempt))
    return state


def _orphan(
    slot: Slot, record: dict[str, Any], started: dict[str, Any] | None, error: Any
) -> Orphan:
    return Orphan(
        group=slot[0],
        rollout=slot[1],
        attempt=int(record["attempt"]),
        started_at=float((started or record).get("at", 0.0)),
        error=None if error is None else str(error),
    )


class StepJournal:
    """The open journal of one step; every method returns once its record is durable."""

    def __init__(self, run_directory: Path, step: int) -> None:
        self.step = step
        self.path = step_journal_path(run_directory, step)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            read = read_journal(self.path)
        except JournalCorrupt as exc:
            raise RolloutJournalError(str(exc)) from None
        self._journal = Journal(self.path, valid_length=read.valid_length)
        self._lock = threading.Lock()

    def state(self) -> StepState:
        return read_step(self.path, self.step)

    def close(self) -> None:
        self._journal.close()

    def _append(self, kind: str, group: int, rollout: int | None, **fields: Any) -> None:
        record = {"kind": kind, "step": self.step, "group": group, **fields}
        if rollout is not None:
            record["rollout"] = rollout
        with self._lock:
            self._journal.append(record)

    def selection(self, group: int, node_id: int) -> None:
        self._append("selection", group, None, node_id=node_id)

    def attempt(self, group: int, rollout: int, attempt: int) -> None:
        self._append("attempt", group, rollout, attempt=attempt, at=time.time())

    def attempt_failed(
        self,
        group: int,
        rollout: int,
        attempt: int,
        *,
        answer_lost: bool,
        error: str,
        receipt: str | None = None,
        cancelled: bool = False,
        resent: bool = False,
    ) -> None:
        """A call that ended without a sample.

        `cancelled`: the run's cancellation cut it off, the slot stays open.
        `resent`: the slot's one re-send is granted, in this same line, so
        that no crash can separate the failure from the grant.
        """
        self._append(
            "attempt_failed",
            group,
            rollout,
            attempt=attempt,
            answer_lost=answer_lost,
            error=error,
            receipt=receipt,
            cancelled=cancelled,
            resent=resent,
        )

    def guidance(self, group: int, rollout: int, attempt: int, sample: GuidanceSample) -> None:
        self._append("guidance", group, rollout, attempt=attempt, sample=sample.to_json())

    def finished(self, done: FinishedRollout) -> None:
        r = done.rollout
        self._append("finished", r.group, r.rollout, finished=done.to_json())

    def acknowledged(self, group: int, rollout: int, report_id: str) -> None:
        self._append("acknowledged", group, rollout, report_id=report_id)
