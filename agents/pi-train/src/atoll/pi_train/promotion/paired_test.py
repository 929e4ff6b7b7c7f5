"""The promotion's decision test: problems, not attempts, are the unit; Holm across checkpoints.

Attempts at one problem share everything but the sampling noise (the
statement, the model's grasp of it), so they are not independent: four
passes on one problem the candidate learnt are one piece of evidence, not
four. Pooling attempts into one 2x2 table (Fisher's test) counts them as
independent and overstates the evidence; it stays on the record as a
descriptive figure only.

The decision test here takes each problem's (or transfer task's) pass
fraction on each side, the per-problem difference candidate - baseline, and
asks how often flipping the signs of those differences at random would give
a mean difference at least as large as the one observed: the exact paired
sign-flip permutation test (scipy's `permutation_test`, one-sided, candidate
better). Under the null hypothesis that the candidate is no better on any
problem, each difference is as likely negative as positive. It is exact
(all 2^k sign patterns of the k non-zero differences) up to `EXACT_LIMIT`
differing problems, and a seeded Monte Carlo estimate with the conservative
(hits + 1) / (resamples + 1) beyond. With k differing problems the smallest
p-value it can give is 2^-k (`smallest_p`).

Holm: a run whose rule allows m promotions corrects each section's p-value
for m comparisons with Holm's step-down adjustment (`holm`); comparisons not
made yet count as p = 1. Holm's adjusted p-values only grow when another
p-value grows, so a decision made with the unknown ones at 1 still holds
once they are known.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EXACT_LIMIT = 16  # 2^16 sign patterns; more differing problems are sampled
RESAMPLES = 99_999
SEED = 0
TEST_NAME = "paired sign-flip permutation test over per-problem pass fractions"


@dataclass(frozen=True)
class Counts:
    attempts: int
    passes: int

    @property
    def fraction(self) -> float:
        return self.passes / self.attempts


@dataclass(frozen=True)
class PairedResult:
    """The test's inputs and outcome, as the promotion record keeps them."""

    units: list[dict[str, Any]]  # per unit: its name, both sides' counts, the difference
    unpaired: list[str]  # units with attempts on one side only: left out
    delta: float | None  # mean per-unit difference (candidate - baseline)
    p_greater: float | None  # one-sided: the candidate is better
    method: str  # "exact", "monte-carlo" or "none" (no paired unit)
    differing: int  # units whose difference is not 0

    def to_json(self, unit: str) -> dict[str, Any]:
        return {
            "test": TEST_NAME,
            "unit": unit,
            "alternative": "candidate > baseline",
            "method": self.method,
            **({"resamples": RESAMPLES, "seed": SEED} if self.method == "monte-carlo" else {}),
            "units_compared": len(self.units),
            "units_differing": self.differing,
            "units_unpaired": self.unpaired,
            "delta": self.delta,
            "p_greater": self.p_greater,
            "per_unit": self.units,
        }


def counts_by_unit(rows: Iterable[Mapping[str, Any]], key: str = "problem") -> dict[str, Counts]:
    """Attempts and passes per unit (a row's `key`) from scored rollout rows."""
    cells: dict[str, list[int]] = {}
    for row in rows:
        cell = cells.setdefault(str(row.get(key)), [0, 0])
        cell[0] += 1
        cell[1] += bool(row.get("passed"))
    return {unit: Counts(n, c) for unit, (n, c) in cells.items()}


def _order(unit: str) -> tuple[int, int | str]:
    return (0, int(unit)) if unit.isdigit() else (1, unit)


def paired_test(baseline: Mapping[str, Counts], candidate: Mapping[str, Counts]) -> PairedResult:
    """The one-sided exact paired test of candidate > baseline over the units both sides have."""
    from statistics import fmean

    from scipy.stats import permutation_test

    names = sorted(set(baseline) | set(candidate), key=_order)
    paired = [
        u
        for u in names
        if baseline.get(u, Counts(0, 0)).attempts and candidate.get(u, Counts(0, 0)).attempts
    ]
    unpaired = [u for u in names if u not in paired]
    units = []
    differences = []
    for u in paired:
        a, b = baseline[u], candidate[u]
        difference = b.fraction - a.fraction
        differences.append(difference)
        units.append(
            {
                "unit": u,
                "baseline": {"attempts": a.attempts, "passes": a.passes},
                "candidate": {"attempts": b.attempts, "passes": b.passes},
                "difference": difference,
            }
        )
    if not paired:
        return PairedResult(units, unpaired, None, None, "none", 0)
    delta = fmean(differences)
    nonzero = [d for d in differences if d != 0.0]
    if not nonzero:  # every sign pattern gives the same mean: nothing favours the candidate
        return PairedResult(units, unpaired, delta, 1.0, "exact", 0)
    if len(nonzero) == 1:  # two sign patterns (scipy wants two observations at least)
        return PairedResult(units, unpaired, delta, 0.5 if nonzero[0] > 0 else 1.0, "exact", 1)
    exact = len(nonzero) <= EXACT_LIMIT
    result = permutation_test(
        (nonzero,),
        lambda sample, axis: sample.mean(axis=axis),
        permutation_type="samples",  # one sample: the signs are flipped
        vectorized=True,
        n_resamples=2 ** len(nonzero) if exact else RESAMPLES,  # 2^k or more: exact
        alternative="greater",
        rng=SEED,
    )
    method = "exact" if exact else "monte-carlo"
    return PairedResult(units, unpaired, delta, float(result.pvalue), method, len(nonzero))


def smallest_p(units: int) -> float:
    """The smallest one-sided p-value the test can give over `units` units."""
    if units <= 0:
        return 1.0
    return 2.0**-units if units <= EXACT_LIMIT else 1.0 / (RESAMPLES + 1)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
