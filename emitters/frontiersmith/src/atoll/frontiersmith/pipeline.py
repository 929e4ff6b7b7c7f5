"""The run: seeds in order, `--workers` at a time, until the target, the candidates or the money end.

Finished seeds (accepted or rejected) are journaled and skipped on resume;
a seed that ended in an infrastructure error is tried again. The run stops
cleanly — no new paid request, in-flight requests allowed to settle — when
the target is reached, the budget cannot cover the next request, the
provider refuses the key, the model or the endpoint (401, 403, 404), or the
user interrupts it; seeds cut short that way are not journaled, so a resume
continues them (replaying what was paid). A request that becomes uncertain
only skips its seed (an error, so a resume tries it again once the receipt
is reconciled): the run goes on with the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from atoll.core.ledger import BudgetExhausted
from atoll.core.llm import ProviderRejected, StopRequested
from atoll.frontiersmith.candidate import Context, process
from atoll.frontiersmith.lineage import Lineage
from atoll.frontiersmith.outcome import Outcome, Status
from atoll.frontiersmith.seeds import Seed


class StopReason(StrEnum):
    COMPLETE = "complete"  # every seed (or --max-candidates) was tried
    TARGET = "target_reached"
    BUDGET = "budget_exhausted"
    PROVIDER = "provider_refused"  # 401/403/404: the key, the model or the endpoint is wrong
    INTERRUPTED = "interrupted"
    STATE_ERROR = "state_error"  # `--rounds`: a round could not close (a damaged bundle or record)


@dataclass
class RunState:
    """What the run knows while it goes: for progress and for the final summary."""

    target: int
    accepted: int = 0
    finished: int = 0
    started: int = 0
    stop: StopReason | None = None
    stop_detail: str = ""
    active: dict[str, str] = field(default_factory=dict)  # seed id -> stage
    wall_started: float = field(default_factory=time.monotonic)

    def request_stop(self, reason: StopReason, detail: str = "") -> None:
        if self.stop is None:
            self.stop = reason
            self.stop_detail = detail


OnOutcome = Callable[[Outcome], None]


class Campaign:
    """The state of the round under way (`--rounds`): what the paid chat and the signal
    handler ask whether to stop. An interrupt stops the round under way and every later one."""

    def __init__(self, target: int) -> None:
        self.state = RunState(target=target)
        self.round = 1
        self._interrupt: str | None = None

    def start_round(self, number: int) -> RunState:
        if number != self.round:
            self.state = RunState(target=self.state.target)
            self.round = number
        if self._interrupt is not None:
            self.state.request_stop(StopReason.INTERRUPTED, self._interrupt)
        return self.state

    def request_stop(self, reason: StopReason, detail: str = "") -> None:
        if reason is StopReason.INTERRUPTED:
            self._interrupt = detail
        self.state.request_stop(reason, detail)


async def run_seeds(
    seeds: list[Seed],
    ctx: Context,
    state: RunState,
    journal: dict[str, dict[str, Any]],
    on_outcome: OnOutcome,
    lineages: Mapping[str, Lineage] | None = None,
) -> RunState:
    """Process the seeds that are not journaled yet, `workers` at a time.

    `journal` holds these seeds' outcomes (a round's, with `--rounds`); `lineages` the seeds'
    rounds and origins (a seed not in it is a round-1 seed of the run's set).
    """
    config = ctx.config
    state.accepted = sum(1 for o in journal.values() if o["status"] == Status.ACCEPTED)
    limit = config.max_candidates or len(seeds)
    tried = {sid for sid, o in journal.items() if o["status"] != Status.ERROR}
    pending = [s for s in seeds if s.id not in tried]
    budget_left = max(0, limit - len(tried))
    pending = pending[:budget_left]
    if state.accepted >= config.target:
        state.request_stop(StopReason.TARGET)
        return state
    slots = asyncio.Semaphore(config.workers)
    running: list[asyncio.Task[None]] = []

    async def one(seed: Seed) -> None:
        try:
            outcome = await process(seed, ctx, (lineages or {}).get(seed.id))
        except (StopRequested, asyncio.CancelledError):
            return
        except BudgetExhausted as exc:
            state.request_stop(StopReason.BUDGET, str(exc))
            return
        except ProviderRejected as exc:
            state.request_stop(StopReason.PROVIDER, str(exc))
            return
        except Exception:
            state.request_stop(StopReason.INTERRUPTED, f"internal error in seed {seed.id}")
            raise
        finally:
            state.active.pop(seed.id, None)
            slots.release()
        state.finished += 1
        if outcome.status is Status.ACCEPTED:
            state.accepted += 1
            if state.accepted >= config.target:
                state.request_stop(StopReason.TARGET)
        on_outcome(outcome)

    for seed in pending:
        await slots.acquire()
        if state.stop is not None:
            slots.release()
            break
        state.started += 1
        state.active[seed.id] = "queued"
        running.append(asyncio.create_task(one(seed), name=f"seed {seed.id}"))
    if running:
        results = await asyncio.gather(*running, return_exceptions=True)
        for result in results:  # a bug in a worker is raised, never swallowed
            if isinstance(result, Exception):
                state.request_stop(StopReason.INTERRUPTED, f"internal error: {result!r}")
                raise result
    if state.stop is None:
        state.request_stop(StopReason.COMPLETE)
    return state
