"""The execution gate measures diversity as repo2rlenv does, on both sides of each threshold.

For each pair of feasible samples, the mean over the cases of the distance
between their scores; a pair is distinct when that is at least
`--min-score-spread`, and at least `--min-execution-diversity` of the pairs
must be. The trials' outcomes are written here as a trial's verifier would
report them, so the rule itself is what is tested.
"""

from __future__ import annotations

import pytest

from atoll.frontiersmith.config import ConfigError, RunConfig
from atoll.frontiersmith.execution import choose_reference, execution_diversity
from atoll.frontiersmith.outcome import Reason, Rejected
from atoll.frontiersmith.trials import CaseScore, TrialOutcome


def _trial(label: str, scores: list[float]) -> TrialOutcome:
    cases = [CaseScore(s, "ok", True) for s in scores]
    return TrialOutcome(label, label, "", 0.1, reward=sum(scores) / len(scores), cases=cases)


def _outcomes(samples: list[list[float]]) -> dict[str, TrialOutcome]:
    zero = [0.0] * len(samples[0])
    outcomes = {label: _trial(label, zero) for label in ("nop", "empty-answer", "silent-answer")}
    outcomes["baseline"] = _trial("baseline", [0.0625] * len(samples[0]))
    outcomes |= {f"sample-{i}": _trial(f"sample-{i}", s) for i, s in enumerate(samples)}
    return outcomes


def _config(spread: float, share: float) -> RunConfig:
    return RunConfig(
        seeds="x",
        target=1,
        budget_micro=1,
        model="m",
        min_score_spread=spread,
        min_execution_diversity=share,
    )


# Two samples 0.125 apart on average (0.25 on one case of two), the third equal to the first:
# of the three pairs, 0-1 and 1-2 are 0.125 apart and 0-2 not at all.
SAMPLES = [[0.5, 0.5], [0.5, 0.75], [0.5, 0.5]]


def test_the_distance_is_the_mean_over_the_cases_not_the_largest_difference() -> None:
    measured = execution_diversity(dict(enumerate(SAMPLES)), 0.125, 0.3)
    assert [(i, j, d) for i, j, d in measured.pairs] == [(0, 1, 0.125), (0, 2, 0.0), (1, 2, 0.125)]
    assert measured.distinct_fraction == 2 / 3


@pytest.mark.parametrize(
    ("spread", "share", "passes"),
    [
        (0.125, 2 / 3, True),  # each distance exactly at the spread: the pair counts
        (0.125 + 1e-9, 0.0 + 1e-9, False),  # just above both distances: no distinct pair
        (0.125, 2 / 3 + 1e-9, False),  # two thirds of the pairs, just short of the share
        (0.0, 1.0, True),  # a spread of 0 makes every pair distinct
    ],
    ids=["at both thresholds", "spread just above", "share just above", "spread 0"],
)
def test_the_gate_on_both_sides_of_each_threshold(
    spread: float, share: float, passes: bool
) -> None:
    config = _config(spread, share)
    if passes:
        best, diversity = choose_reference(_outcomes(SAMPLES), 3, config)
        assert best == 1 and diversity.ok
        assert diversity.to_json()["min_execution_diversity"] == share
        return
    with pytest.raises(Rejected) as rejected:
        choose_reference(_outcomes(SAMPLES), 3, config)
    assert rejected.value.reason is Reason.LOW_EXECUTION_DIVERSITY_OR_IMPROVEMENT
    assert "mean distances 0-1: 0.125, 0-2: 0, 1-2: 0.125" in rejected.value.detail
    assert rejected.value.evidence["execution_diversity"]["min_score_spread"] == spread


def test_one_case_that_differs_no_longer_passes_a_larger_spread() -> None:
    """The old gate passed on any one case 0.001 apart; a mean over 16 cases needs more."""
    samples = [[0.5] * 16, [0.5] * 15 + [0.502]]
    with pytest.raises(Rejected) as rejected:
        choose_reference(_outcomes(samples), 2, _config(0.001, 0.3))
    assert rejected.value.detail.startswith("0.00 of feasible sample pairs")


def test_only_feasible_samples_are_paired() -> None:
    outcomes = _outcomes(SAMPLES)
    outcomes["sample-1"] = TrialOutcome(
        "sample-1", "t", "", 0.1, reward=0.0, cases=[CaseScore(0.0, "infeasible", False)] * 2
    )
    with pytest.raises(Rejected) as rejected:  # 0 and 2 score alike: nothing distinct is left
        choose_reference(outcomes, 3, _config(0.001, 0.3))
    assert rejected.value.detail.endswith("(mean distances 0-2: 0)")


@pytest.mark.parametrize(
    ("field", "value", "flag"),
    [
        ("min_execution_diversity", 1.5, "--min-execution-diversity"),
        ("min_execution_diversity", -0.1, "--min-execution-diversity"),
        ("min_score_spread", -0.001, "--min-score-spread"),
        ("min_score_spread", 2.0, "--min-score-spread"),
    ],
)
def test_settings_outside_0_and_1_are_refused(field: str, value: float, flag: str) -> None:
    config = RunConfig(seeds="x", target=1, budget_micro=1, model="m", **{field: value})
    with pytest.raises(ConfigError, match=flag):
        config.validate()
