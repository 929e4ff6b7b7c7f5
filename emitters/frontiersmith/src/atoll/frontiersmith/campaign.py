"""The rounds of a run, one after another (`--rounds`; one round is a single-round run).

Each round runs its seeds through `pipeline.run_seeds` with a target of its
own (`--target` tasks accepted in that round) and closes when it ends
normally (`rounds.Rounds.close`); the next round's seeds are the tasks the
closed round accepted and its population kept. A round that stops any other
way (budget, provider, interrupt) ends the run there, and a resume continues
it: rounds already finished run no seed again, and every answered request
is replayed from the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from atoll.frontiersmith.candidate import Context
from atoll.frontiersmith.display import Display
from atoll.frontiersmith.lineage import Lineage, original
from atoll.frontiersmith.pipeline import Campaign, OnOutcome, StopReason, run_seeds
from atoll.frontiersmith.rounds import Rounds
from atoll.frontiersmith.seeds import Seed

# How a round ends when the next one may start.
FINISHED = frozenset({StopReason.COMPLETE, StopReason.TARGET})


async def run_rounds(
    first: Sequence[Seed],
    ctx: Context,
    campaign: Campaign,
    journal: dict[str, dict[str, Any]],
    on_outcome: OnOutcome,
    display: Display,
) -> None:
    """Every round from the first, until the last closes, one has no seeds, or one stops.

    RunError when a round cannot close (a bundle to read back or move is damaged).
    """
    config = ctx.config
    rounds = Rounds(ctx.run, config)
    seeds = list(first)
    lineages: dict[str, Lineage] = {s.id: original(s) for s in seeds}
    for number in range(1, config.rounds + 1):
        if number > 1:
            handed = rounds.next_seeds(number - 1)
            if not handed:
                campaign.state.stop = StopReason.COMPLETE
                campaign.state.stop_detail = (
                    f"round {number} has no seeds: round {number - 1} kept no task of its own"
                )
                return
            seeds = [seed for seed, _ in handed]
            lineages |= {seed.id: lineage for seed, lineage in handed}
        state = campaign.start_round(number)
        mine = {s.id: journal[s.id] for s in seeds if s.id in journal}
        label = f"round {number}/{config.rounds}" if config.rounds > 1 else ""
        with display.live(mine, label):
            await run_seeds(seeds, ctx, state, mine, on_outcome, lineages)
        if state.stop not in FINISHED:
            return
        if config.rounds > 1:
            record = rounds.close(number, [s.id for s in seeds], journal, first)
            ctx.run.log_event(
                {
                    "event": "round",
                    "round": number,
                    "population": len(record["population"]),
                    "dropped": [d["task"] for d in record["dropped"]],
                    "next_seeds": [entry["seed"]["id"] for entry in record["next_seeds"]],
                }
            )
            onward = (
                f", {len(record['next_seeds'])} seed(s) for round {number + 1}"
                if number < config.rounds
                else ""
            )
            display.note(
                f"round {number} closed: {len(record['population'])} task(s) in the population, "
                f"{len(record['dropped'])} dropped{onward}"
            )
