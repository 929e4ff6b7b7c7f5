"""Replay and forgetting: which Euler problems the curriculum-driven trainer's groups come from.

A training run on a curriculum (`atoll pi train answer --curriculum STATE`)
reads the curriculum's state (`atoll euler curriculum`): the current
problem is the frontier, the mastered problems feed replay. Every group of
the run is drawn from one of three sources in a fixed mixture (by default
70% current frontier, 20% recently mastered, 10% older mastered):

- the regression window comes out first: up to `regression_window` of the
  problems mastered first (the ones longest since their own training, where
  forgetting shows first), always leaving the most recently mastered problem
  to replay. Its problems are evaluated (each language x strategy sampled
  `--group-size` times, as a training group is, and scored, no gradient) and
  are in no training pool, so they never receive a gradient;
- "recent" is the last `recent` mastered problems outside the window,
  "older" the rest of them;
- a source without problems (nothing mastered yet) drops out and the others
  share its part in their own proportions.

Group slots are dealt in order, each to the source furthest below its share
so far (ties to the frontier, then recent, then older), so any prefix of the
run, and every iteration's batch when the batch is a multiple of the mix's
denominator, keeps the proportions to within one group. Within a source,
conditions (language x strategy) rotate and replayed problems are drawn with
a seed from the store digest and the curriculum's mastered list, never
Python's hash: the same state gives the same run.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

SOURCES = ("frontier", "replay-recent", "replay-older")
REGRESSION_TAG = "regression"


class ReplayError(ValueError):
    """A mixture or window that cannot be used; the message says which flag to fix."""


@dataclass(frozen=True)
class ReplayMix:
    current: float = 0.7
    recent: float = 0.2
    older: float = 0.1
    recent_window: int = 3
    regression_window: int = 2
    regression_every: int = 5

    def __post_init__(self) -> None:
        shares = (self.current, self.recent, self.older)
        if any(s < 0 for s in shares) or self.current <= 0:
            raise ReplayError(
                "--replay is three non-negative fractions (frontier, recent, older), "
                "the first above 0"
            )
        if not math.isclose(sum(shares), 1.0, abs_tol=1e-6):
            raise ReplayError(f"--replay {','.join(map(str, shares))} must sum to 1")
        if self.recent_window < 1:
            raise ReplayError("--recent must be at least 1")
        if self.regression_window < 0 or self.regression_every < 1:
            raise ReplayError("--regression-window must be >= 0 and --regression-every >= 1")

    @classmethod
    def parse(cls, text: str, **windows: int) -> ReplayMix:
        try:
            parts = tuple(float(x) for x in text.split(","))
        except ValueError:
            raise ReplayError(f"--replay {text!r} is not three comma-separated numbers") from None
        if len(parts) != 3:
            raise ReplayError(f"--replay {text!r} is not three comma-separated numbers")
        return cls(*parts, **windows)

    def shares(self) -> dict[str, float]:
        return dict(zip(SOURCES, (self.current, self.recent, self.older), strict=True))


@dataclass(frozen=True)
class Slot:
    """One training group: the source it came from, its problem and its condition."""

    source: str
    problem: int
    language: str
    strategy: str


@dataclass(frozen=True)
class ReplayPlan:
    frontier: int
    recent: list[int]
    older: list[int]
    regression: list[int]
    slots: list[Slot]
    mix: ReplayMix

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for slot in self.slots if slot.source == s) for s in SOURCES}

    def describe(self, group_size: int) -> dict[str, Any]:
        """The mixture and the window, as the manifest and every report carry them; the
        window's tasks are sampled `group_size` times each, as a training group is."""
        counts = self.counts()
        total = len(self.slots)
        return {
            "mix": {
                "configured": self.mix.shares(),
                "groups": counts,
                "fractions": {s: round(n / total, 6) for s, n in counts.items()},
                "pools": {
                    "frontier": [self.frontier],
                    "replay-recent": self.recent,
                    "replay-older": self.older,
                },
                "recent_window": self.mix.recent_window,
            },
            "regression_window": {
                "problems": self.regression,
                "size": self.mix.regression_window,
                "group_size": group_size,
                "every_iterations": self.mix.regression_every,
                "receives_gradients": False,
            },
        }


def split_mastered(mastered: list[int], mix: ReplayMix) -> tuple[list[int], list[int], list[int]]:
    """(regression window, recent pool, older pool) from the mastered list, in mastering order."""
    window_size = min(mix.regression_window, max(len(mastered) - 1, 0))
    window = mastered[:window_size]
    rest = mastered[window_size:]
    recent = rest[-mix.recent_window :]
    older = rest[: -mix.recent_window] if len(rest) > mix.recent_window else []
    return window, recent, older


def deal(shares: dict[str, float], available: set[str], count: int) -> list[str]:
    """`count` slots, each to the available source furthest below its (renormalized) share."""
    # Exact fractions: a tie (0.7 x 2 - 1 against 0.2 x 2) is a tie, not a rounding accident.
    live = {
        s: Fraction(shares[s]).limit_denominator(10**6)
        for s in SOURCES
        if s in available and shares[s] > 0
    }
    total = sum(live.values())
    weights = {s: p / total for s, p in live.items()}
    dealt: dict[str, int] = dict.fromkeys(weights, 0)
    order: list[str] = []
    for index in range(count):
        source = max(
            weights, key=lambda s: ((index + 1) * weights[s] - dealt[s], -SOURCES.index(s))
        )
        dealt[source] += 1
        order.append(source)
    return order


def plan(
    current: int,
    mastered: list[int],
    conditions: list[tuple[str, str]],
    count: int,
    mix: ReplayMix,
    seed: str,
) -> ReplayPlan:
    """The run's `count` training slots, in order."""
    if not conditions:
        raise ReplayError("no language x strategy condition to train")
    window, recent, older = split_mastered([n for n in mastered if n != current], mix)
    pools = {"frontier": [current], "replay-recent": recent, "replay-older": older}
    sources = deal(mix.shares(), {s for s, pool in pools.items() if pool}, count)
    turn: dict[str, int] = dict.fromkeys(SOURCES, 0)
    rngs = {s: random.Random(f"{seed}:{s}") for s in SOURCES}
    slots = []
    for source in sources:
        language, strategy = conditions[turn[source] % len(conditions)]
        problem = current if source == "frontier" else rngs[source].choice(pools[source])
        turn[source] += 1
        slots.append(Slot(source, problem, language, strategy))
    return ReplayPlan(current, recent, older, window, slots, mix)


def report_lines(manifest: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """The mixture, the window and the window's evaluations, for a run's summary."""
    replay = manifest.get("replay")
    if not replay:
        return []
    mix, window = replay["mix"], replay["regression_window"]
    conf, groups, pools = mix["configured"], mix["groups"], mix["pools"]
    lines = [
        f"Replay mix configured {conf['frontier']:.0%} frontier / {conf['replay-recent']:.0%} "
        f"recent / {conf['replay-older']:.0%} older; trained groups: frontier "
        f"{groups['frontier']} (problem {pools['frontier'][0]}), recent "
        f"{groups['replay-recent']} (from {pools['replay-recent'] or 'none'}), older "
        f"{groups['replay-older']} (from {pools['replay-older'] or 'none'}).",
        "",
        f"Regression window (evaluation only, never a gradient): problems "
        f"{window['problems'] or 'none'}, every {window['every_iterations']} iteration(s)"
        + (
            f", {window['group_size']} samples per language x strategy."
            if "group_size" in window
            else "."
        ),
        "",
    ]
    evaluated = [r for r in rows if f"test/env/{REGRESSION_TAG}/reward/total" in r]
    if evaluated:
        lines += ["| iteration | regression reward | regression correct |", "|---|---|---|"]
        for row in evaluated:
            reward = row[f"test/env/{REGRESSION_TAG}/reward/total"]
            correct = row.get(f"test/env/{REGRESSION_TAG}/correct")
            shown = "–" if correct is None else f"{correct:.3f}"
            lines.append(f"| {row.get('step')} | {reward:.3f} | {shown} |")
        lines.append("")
    return lines
