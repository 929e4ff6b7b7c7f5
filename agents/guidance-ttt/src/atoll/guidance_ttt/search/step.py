"""One step of the search: G parents, R rollouts each, and the barrier of all G x R reports.

Rollouts run concurrently on threads, with separate limits for guidance
calls, executor calls and judge submissions (the three are different
machines with different capacities). Every rollout is booked into the archive
and the step journal under one lock, in one order, so that the archive's
child ids (which the reports carry) come out the same when a crashed step is
replayed from its journal. An infrastructure failure stops the step: rollouts
already running finish and are journaled, none is started after it, and the
error is raised once they are done, so a resume loses nothing. A cancelled
run stops the same way, only sooner: the run's `Cancellation` aborts the
calls in flight, and the step raises `RunCancelled`.

A training step (`complete_grid`) needs every slot reported against a
receipt, and a guidance call that failed without one leaves its slot empty
for good. When Reef certainly recorded nothing (`GuidanceUnavailable.
unrecorded`: nothing was sampled that anyone can see), the slot's call is
sent once more, the grant journaled with the failure; any other failure,
or a second one, stops the step with `GridIncomplete`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from atoll.guidance_ttt.contract import Direction, Task
from atoll.guidance_ttt.prompting.answer_parsing import parse_executor, parse_guidance
from atoll.guidance_ttt.prompting.prompts import (
    Prompt,
    executor_prompt,
    guidance_prompt,
    slot_seed,
)
from atoll.guidance_ttt.search.archive import Rollout
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification
from atoll.guidance_ttt.services.cancel import Cancellation, RunCancelled
from atoll.guidance_ttt.services.executor import ExecutorAnswer
from atoll.guidance_ttt.services.reef_guidance import (
    GridSlot,
    GuidanceSample,
    GuidanceUnavailable,
    report_payload,
)
from atoll.guidance_ttt.state.durable_archive import Library
from atoll.guidance_ttt.state.step_journal import (
    FailedCall,
    FinishedRollout,
    Slot,
    StepJournal,
    StepState,
)

# Rollout metadata key: True when the program came from the parser's no-`<solution>` fallback.
PROGRAM_FROM_FALLBACK = "program_from_fallback"


class GuidanceService(Protocol):
    def sample(self, prompt: Prompt, seed: int | None = None) -> GuidanceSample: ...

    def report(self, payload: dict[str, Any], receipt: str) -> str: ...


class ExecutorService(Protocol):
    def complete(self, prompt: Prompt) -> ExecutorAnswer: ...


class ScoringService(Protocol):
    def score(self, program: str) -> Verification: ...


class StepFailed(RuntimeError):
    """The step stopped on an infrastructure failure; resume the run to finish it."""


class StepInconsistent(RuntimeError):
    """The step journal and the archive disagree; the run cannot safely continue."""


class GridIncomplete(RuntimeError):
    """A slot of the step can never be reported to Reef, so Reef can never train the step."""


@dataclass(frozen=True)
class Limits:
    guidance: int = 64
    executor: int = 32
    judge: int = 8


@dataclass
class StepContext:
    """Everything a step needs; built once per run by the controller."""

    task: Task
    library: Library
    guidance: GuidanceService
    executor: ExecutorService
    scorer: ScoringService
    run_id: str
    groups: int
    rollouts: int
    limits: Limits = field(default_factory=Limits)
    cancellation: Cancellation = field(default_factory=Cancellation)
    # Training needs every slot reported: a slot without a receipt stops the step at once,
    # after the one re-send of a call Reef certainly did not record.
    complete_grid: bool = False
    # The wait before that re-send: Reef's 429/502/503 say the model's server is busy or down.
    guidance_resend_delay_s: float = 5.0
    # Seeds each slot's guidance sample (`slot_seed`); None: unseeded.
    sampling_seed: int | None = None


@dataclass
class StepSummary:
    """What one step did, as the resume state and the logs record it."""

    step: int
    elapsed_s: float
    sampled: int
    valid: int
    well_formed_guidance: int
    non_constant_groups: int
    degenerate: bool
    retained_trajectories: int
    best_raw_score: float | None
    orphans: list[dict[str, Any]]
    resumed_rollouts: int
    reposted_reports: int
    failed_guidance_calls: int = 0
    # Programs taken from an answer with no <solution> block (the reference's fallback);
    # counted apart so that an executor drifting from the required format shows.
    programs_from_fallback: int = 0
    unreported: list[list[int]] = field(default_factory=list)
    # [group, rollout] of the slots whose guidance call was sent a second time.
    resent_guidance_slots: list[list[int]] = field(default_factory=list)
    training: str = "pending"
    grad_norm: float | None = None
    train_metrics: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepSummary:
        return cls(**data)


Progress = Callable[[str, int], None]


def _no_progress(stage: str, advance: int) -> None:
    return


def run_step(context: StepContext, step: int, progress: Progress = _no_progress) -> StepSummary:
    """Run (or finish, after a crash) step `step` up to and including its report barrier."""
    started = time.monotonic()
    journal = StepJournal(context.library.paths.directory, step)
    try:
        state = journal.state()
        parents = _select(context, journal, state, step)
        resumed = _replay(context, state, step)
        if context.complete_grid and state.unreported():
            first = state.unreported()[0]
            resent = (first.rollout.group, first.rollout.rollout) in state.resends
            raise GridIncomplete(_grid_incomplete(step, first, resent))
        reposted = 0
        for done in state.unacknowledged():
            _report(context, journal, done)
            reposted += 1
        _run_missing(context, journal, state, parents, step, progress)
        final = journal.state()
    finally:
        journal.close()
    return _summarise(context, final, step, time.monotonic() - started, resumed, reposted)


def _select(context: StepContext, journal: StepJournal, state: StepState, step: int) -> list[Node]:
    parents = context.library.select_step(step, context.groups)
    for group, node in enumerate(parents):
        known = state.selections.get(group)
        if known is None:
            journal.selection(group, node.id)
        elif known != node.id:
            raise StepInconsistent(
                f"step {step} group {group}: the journal expanded node {known}, the archive "
                f"selects node {node.id}; the archive is not the one this step started from"
            )
    return parents


def _replay(context: StepContext, state: StepState, step: int) -> int:
    """Book the journal's finished rollouts into the archive, in their original order."""
    archive = context.library.archive
    for slot in state.finish_order:
        done = state.finished[slot]
        if slot in archive.finished:
            child = archive.finished[slot]
        else:
            child = context.library.record(done.rollout)
        if child != done.child_id:
            raise StepInconsistent(
                f"step {step} slot {slot}: replay made child {child}, the reported child is "
                f"{done.child_id}; the archive is not the one this step started from"
            )
    return len(state.finish_order)


def _run_missing(
    context: StepContext,
    journal: StepJournal,
    state: StepState,
    parents: list[Node],
    step: int,
    progress: Progress,
) -> None:
    missing = [
        (group, rollout)
        for group in range(context.groups)
        for rollout in range(context.rollouts)
        if (group, rollout) not in state.finished
    ]
    runner = _Runner(context, journal, state, parents, step, progress)
    if missing:
        workers = min(len(missing), max(context.limits.guidance, context.limits.executor) + 8)
        with ThreadPoolExecutor(workers, thread_name_prefix=f"step{step}") as pool:
            for _ in pool.map(runner.run, missing):
                pass
    if context.cancellation.cancelled:
        raise RunCancelled(f"step {step} was cancelled; rerun the same command to resume it")
    if runner.errors:
        first = runner.errors[0]
        if isinstance(first, GridIncomplete):
            raise first
        more = f" (and {len(runner.errors) - 1} more failures)" if len(runner.errors) > 1 else ""
        raise StepFailed(f"step {step} stopped: {first}{more}") from first


class _Runner:
    """Runs single rollouts; shared by the worker threads of one step."""

    def __init__(
        self,
        context: StepContext,
        journal: StepJournal,
        state: StepState,
        parents: list[Node],
        step: int,
        progress: Progress,
    ) -> None:
        self.context = context
        self.journal = journal
        self.state = state
        self.parents = parents
        self.step = step
        self.progress = progress
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self._errors_lock = threading.Lock()
        self._booking = threading.Lock()
        self._guidance_slots = threading.BoundedSemaphore(context.limits.guidance)
        # Slots that had their one guidance re-send, in an earlier process or in this one.
        self._resent: set[Slot] = set(state.resends)
        self._executor_slots = threading.BoundedSemaphore(context.limits.executor)
        self._judge_slots = threading.BoundedSemaphore(context.limits.judge)

    def stopped(self) -> bool:
        return self.stop.is_set() or self.context.cancellation.cancelled

    def run(self, slot: Slot) -> None:
        if self.stopped():
            return
        try:
            self._rollout(*slot)
        except Exception as exc:  # every failure here is infrastructure: stop the step
            with self._errors_lock:
                self.errors.append(exc)
            self.stop.set()

    def _rollout(self, group: int, rollout: int) -> None:
        context, task = self.context, self.context.task
        parent = self.parents[group]
        entry = parent.entry
        slot = (group, rollout)
        outcome = (
            self.state.samples.get(slot)
            or self.state.failed_calls.get(slot)
            or self._sample(group, rollout, entry)
        )
        self.progress("guidance", 1)
        answer: ExecutorAnswer | None = None
        program: str | None = None
        summary = ""
        guidance: str | None = None
        from_fallback = False
        if isinstance(outcome, FailedCall):
            receipt = outcome.receipt
            verification = Verification(Status.GUIDANCE_FAILED, None, 0.0, outcome.error)
        else:
            receipt = outcome.receipt
            parsed = parse_guidance(outcome.content)
            guidance = parsed.guidance
            if guidance is None:
                verification = Verification(
                    Status.GUIDANCE_REJECTED, None, 0.0, parsed.reason or ""
                )
            else:
                with self._executor_slots:
                    context.cancellation.check("the executor call")
                    answer = context.executor.complete(executor_prompt(task, entry, guidance))
                self.progress("executor", 1)
                result = parse_executor(answer.content, task.contract.solution_language)
                program, summary = result.program, result.summary
                from_fallback = result.program_from_fallback
                if program is None:
                    verification = Verification(
                        Status.PARSE_ERROR, None, 0.0, result.program_error or "no program found"
                    )
                else:
                    with self._judge_slots:
                        context.cancellation.check("judging")
                        verification = context.scorer.score(program)
        self.progress("judged", 1)
        done = self._book(
            group,
            rollout,
            parent,
            receipt,
            guidance,
            program,
            summary,
            verification,
            answer,
            from_fallback,
        )
        if done.receipt is None:
            if context.complete_grid:
                raise GridIncomplete(_grid_incomplete(self.step, done, slot in self._resent))
        else:
            _report(context, self.journal, done)
        self.progress("reported", 1)

    def _sample(self, group: int, rollout: int, entry: Entry) -> GuidanceSample | FailedCall:
        """The slot's guidance call: its sample, or the failure it ended in.

        A call the run's cancellation cut off is not the slot's outcome: it is
        journaled as such (an orphan, as after a crash), and the resumed run
        sends the slot's call again. A call granted the slot's one re-send
        (`_may_resend`) is not its outcome either: the call is sent again,
        after a short wait for the model's server.
        """
        prompt = guidance_prompt(self.context.task, entry)
        attempt = self.state.attempts.get((group, rollout), 0)
        while True:
            attempt += 1
            outcome = self._call(group, rollout, attempt, prompt)
            if not (isinstance(outcome, FailedCall) and outcome.resent):
                return outcome
            self._resent.add((group, rollout))
            if self.context.cancellation.wait(self.context.guidance_resend_delay_s):
                raise RunCancelled("the run was cancelled before a guidance call was sent again")

    def _may_resend(self, group: int, rollout: int, failure: GuidanceUnavailable) -> bool:
        """Whether this failed call may be sent again: once per slot, and only when safe.

        Only a training step needs it (a search-only step books the failed
        rollout and goes on), and only when Reef certainly recorded nothing:
        a call whose answer it may hold is never sent again, or the slot
        would be sampled twice.
        """
        return (
            self.context.complete_grid
            and failure.unrecorded
            and (group, rollout) not in self._resent
        )

    def _call(
        self, group: int, rollout: int, attempt: int, prompt: Prompt
    ) -> GuidanceSample | FailedCall:
        """Send the slot's guidance call once, journaling it before and its outcome after."""
        self.context.cancellation.check("the guidance call")
        if self.stop.is_set():
            raise StepFailed("stopped before the guidance call")
        self.journal.attempt(group, rollout, attempt)
        try:
            with self._guidance_slots:
                if self.context.sampling_seed is None:
                    sample = self.context.guidance.sample(prompt)
                else:
                    seed = slot_seed(self.context.sampling_seed, self.step, group, rollout)
                    sample = self.context.guidance.sample(prompt, seed=seed)
        except RunCancelled as exc:  # the request never left: nothing for Reef to hold
            self.journal.attempt_failed(
                group, rollout, attempt, answer_lost=False, error=str(exc), cancelled=True
            )
            raise
        except GuidanceUnavailable as exc:
            cancelled = self.context.cancellation.cancelled
            resent = not cancelled and self._may_resend(group, rollout, exc)
            self.journal.attempt_failed(
                group,
                rollout,
                attempt,
                answer_lost=exc.answer_lost,
                error=str(exc),
                receipt=exc.receipt,
                cancelled=cancelled,
                resent=resent,
            )
            if cancelled:
                raise RunCancelled("the run was cancelled during a guidance call") from exc
            return FailedCall(attempt, str(exc), exc.receipt, resent)
        self.journal.guidance(group, rollout, attempt, sample)
        return sample

    def _book(
        self,
        group: int,
        rollout: int,
        parent: Node,
        receipt: str | None,
        guidance: str | None,
        program: str | None,
        summary: str,
        verification: Verification,
        answer: ExecutorAnswer | None,
        from_fallback: bool = False,
    ) -> FinishedRollout:
        context = self.context
        metadata: dict[str, Any] = {"receipt": receipt}
        if from_fallback:
            metadata[PROGRAM_FROM_FALLBACK] = True
        record = Rollout(
            step=self.step,
            group=group,
            rollout=rollout,
            parent_id=parent.id,
            verification=verification,
            guidance=guidance,
            program=program,
            summary=summary,
            metadata=metadata,
        )
        slot = GridSlot(self.step, group, rollout, context.groups, context.rollouts)
        value = (
            context.task.contract.search_value(verification.raw_score)
            if verification.scored and verification.raw_score is not None
            else None
        )
        with self._booking:
            child = context.library.record(record)
            payload = report_payload(
                run_id=context.run_id,
                slot=slot,
                verification=verification,
                parent_id=parent.id,
                search_value=value,
                library_entry_id=child,
            )
            done = FinishedRollout(
                rollout=record,
                receipt=receipt,
                child_id=child,
                report=payload,
                executor=None if answer is None else answer.to_json(),
            )
            self.journal.finished(done)
        return done


def _report(context: StepContext, journal: StepJournal, done: FinishedRollout) -> None:
    assert done.receipt is not None  # only a rollout with a receipt is reported
    stored = context.guidance.report(done.report, done.receipt)
    journal.acknowledged(done.rollout.group, done.rollout.rollout, stored)


def _summarise(
    context: StepContext,
    state: StepState,
    step: int,
    elapsed: float,
    resumed: int,
    reposted: int,
) -> StepSummary:
    grid = context.groups * context.rollouts
    unreported = state.unreported()
    if len(state.finished) != grid or len(state.acknowledged) + len(unreported) != grid:
        raise StepInconsistent(
            f"step {step} reached its barrier with {len(state.finished)} finished and "
            f"{len(state.acknowledged)} acknowledged rollouts of {grid}"
        )
    rollouts = [state.finished[s].rollout for s in state.finish_order]
    rewards: dict[int, set[float]] = {}
    for r in rollouts:
        rewards.setdefault(r.group, set()).add(r.verification.reward)
    non_constant = sum(1 for values in rewards.values() if len(values) > 1)
    scored = [r.verification.raw_score for r in rollouts if r.verification.scored]
    best = None
    if scored:
        pick = max if context.task.contract.score_direction is Direction.MAX else min
        best = pick(s for s in scored if s is not None)
    return StepSummary(
        step=step,
        elapsed_s=round(elapsed, 3),
        sampled=len(rollouts),
        valid=sum(1 for r in rollouts if r.verification.scored),
        well_formed_guidance=sum(1 for r in rollouts if r.guidance is not None),
        non_constant_groups=non_constant,
        degenerate=non_constant == 0,
        retained_trajectories=non_constant * context.rollouts,
        best_raw_score=best,
        orphans=[o.to_json() for o in state.orphans],
        resumed_rollouts=resumed,
        reposted_reports=reposted,
        failed_guidance_calls=sum(
            1 for r in rollouts if r.verification.status is Status.GUIDANCE_FAILED
        ),
        programs_from_fallback=sum(1 for r in rollouts if program_from_fallback(r)),
        unreported=[[d.rollout.group, d.rollout.rollout] for d in unreported],
        resent_guidance_slots=[list(slot) for slot in sorted(state.resends)],
    )


def program_from_fallback(rollout: Rollout) -> bool:
    """Whether the rollout's program came from an answer with no `<solution>` block."""
    return rollout.program is not None and bool(rollout.metadata.get(PROGRAM_FROM_FALLBACK))


def _grid_incomplete(step: int, done: FinishedRollout, resent: bool) -> str:
    r = done.rollout
    why = (
        "its one re-send failed too"
        if resent
        else "a call is sent again (once) only when Reef certainly recorded nothing "
        "(HTTP 429, 502 or 503 without a receipt), else the slot could be sampled twice"
    )
    return (
        f"step {step} can never train: the guidance call of group {r.group}, rollout {r.rollout} "
        f"failed without a Reef receipt ({r.verification.message}), so no report can fill that "
        f"slot of the grid Reef's tttd recipe trains on; {why}; this state directory cannot "
        "continue training, start a new one"
    )
