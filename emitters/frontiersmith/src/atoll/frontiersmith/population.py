"""`--population K`: the K most diverse accepted tasks of each family are kept.

A task's diversity is the execution-diversity measure its acceptance
applied: for each pair of its feasible samples, the mean over the cases of
the distance between their two scores. Tasks are ranked by that measure
alone, each on its own cases: two tasks of one family are graded on
different instances (a hardened task makes larger ones), so their per-case
scores are not compared with each other. The order, best first:

1. the share of sample pairs distinct in execution (the gate's
   `distinct_fraction`), higher first;
2. then the mean of the pairs' mean per-case distances, higher first;
3. then the task's name, in code-point order (a tie is broken the same way
   on every run).

A family is the root seed (`lineage.Lineage.root_seed`). The population is
the first K of each family's accepted tasks in that order, over every round
so far, so a task once dropped never comes back: a later round only adds
tasks to rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from atoll.frontiersmith.lineage import of_outcome


@dataclass(frozen=True)
class Ranked:
    """One accepted task as the population ranks it."""

    seed_id: str
    task: str
    family: str  # the root seed
    round: int
    distinct_fraction: float
    mean_distance: float

    def key(self) -> tuple[float, float, str]:
        return (-self.distinct_fraction, -self.mean_distance, self.task)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed_id": self.seed_id,
            "task": self.task,
            "family": self.family,
            "round": self.round,
            "distinct_fraction": self.distinct_fraction,
            "mean_distance": self.mean_distance,
        }


def ranked(outcome: Mapping[str, Any]) -> Ranked:
    """An accepted outcome's place in the ranking, from its execution evidence."""
    measured = outcome["evidence"]["execution"]["execution_diversity"]
    distances = [float(p["mean_distance"]) for p in measured["pairs"]]
    lineage = of_outcome(outcome)
    return Ranked(
        seed_id=str(outcome["seed_id"]),
        task=str(outcome["task"]["name"]),
        family=lineage.root_seed,
        round=lineage.round,
        distinct_fraction=float(measured["distinct_fraction"]),
        mean_distance=math.fsum(distances) / len(distances) if distances else 0.0,
    )


def select(accepted: Iterable[Mapping[str, Any]], size: int) -> tuple[list[Ranked], list[Ranked]]:
    """(kept, dropped): the first `size` of each family in rank order (every task when `size`
    is 0, no cap), each list in rank order within its family, families by name."""
    families: dict[str, list[Ranked]] = {}
    for outcome in accepted:
        entry = ranked(outcome)
        families.setdefault(entry.family, []).append(entry)
    kept: list[Ranked] = []
    dropped: list[Ranked] = []
    for family in sorted(families):
        ordered = sorted(families[family], key=Ranked.key)
        cut = len(ordered) if size == 0 else size
        kept += ordered[:cut]
        dropped += ordered[cut:]
    return kept, dropped
