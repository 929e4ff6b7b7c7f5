"""The collection report's bookkeeping: token costs by kind, rejections by stage and reason,
an unknown worker cost said as unknown, and a cost settled above its reservation flagged.

Built from a real ledger and outcome records as the run journals them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from atoll.core.ledger import Ledger
from atoll.frontiersmith.report import build_summary, render_markdown

BODY = {"model": "m", "messages": []}


def _ledger(tmp_path: Path) -> Ledger:
    ledger = Ledger.create(tmp_path / "ledger.sqlite", 10_000_000)
    for key, label, reserved, cost in [
        ("a", "mutate:s1", 500, 100),
        ("b", "solve:s2", 500, 150),
        ("c", "rollout:s1", 500, 200),
        ("d", "search:s1", 500, 300),
        ("e", "review:s3", 500, 700),  # the provider charged more than the worst case
    ]:
        rid = ledger.reserve(key, label, "m", BODY, reserved)
        ledger.dispatch(rid)
        ledger.settle(rid, cost, response={}, usage=None)
    ledger.reserve("f", "filter:s4", "m", BODY, 900)  # still reserved: no kind's cost
    return ledger


def _rejected(seed: str, stage: str, reason: str) -> dict[str, Any]:
    return {
        "seed_id": seed,
        "family": "f",
        "status": "rejected",
        "reason": reason,
        "stage": stage,
        "detail": "why",
        "reached": ["mutate", stage],
        "tally": {"cost_micro": 0, "worker_seconds": 0.0},
        "evidence": {},
    }


OUTCOMES = {
    "s1": _rejected("s1", "execution", "low_execution_diversity_or_improvement"),
    "s2": _rejected("s2", "construction", "infrastructure_repair_exhausted"),
    "s3": _rejected("s3", "execution", "low_execution_diversity_or_improvement"),
    "s4": _rejected("s4", "execution", "noop_not_zero"),
    "s5": _rejected("s5", "filter", "formulation_rejected"),
}


def _summary(tmp_path: Path, **config: Any) -> dict[str, Any]:
    with _ledger(tmp_path) as ledger:
        return build_summary(
            run_id="r",
            stored={"config": {"model": "m", **config}},
            outcomes=OUTCOMES,
            seed_ids=list(OUTCOMES),
            ledger=ledger,
            stop="complete",
            stop_detail="",
            wall_seconds=1.0,
        )


def test_token_costs_by_kind_and_a_cost_above_its_reservation(tmp_path: Path) -> None:
    totals = _summary(tmp_path)["totals"]
    assert totals["token_cost_by_kind_usd"] == pytest.approx(
        {"synthesis": 950e-6, "rollout": 200e-6, "search": 300e-6}
    )
    assert totals["token_cost_usd"] == pytest.approx(1450e-6)
    assert (totals["settled_above_reservation"], totals["settled_above_reservation_usd"]) == (
        1,
        pytest.approx(200e-6),
    )
    text = render_markdown(_summary(tmp_path / "again"))
    assert "| of which rollout requests | $0.000200 |" in text
    assert "| of which search requests | $0.000300 |" in text
    assert "settled above their reservation (flagged in the ledger) | 1 ($0.000200 over)" in text


def test_rejections_by_stage_then_reason(tmp_path: Path) -> None:
    summary = _summary(tmp_path)
    assert summary["rejections_by_stage"] == {
        "filter": {"formulation_rejected": 1},
        "construction": {"infrastructure_repair_exhausted": 1},
        "execution": {"low_execution_diversity_or_improvement": 2, "noop_not_zero": 1},
    }
    assert list(summary["rejections_by_stage"]) == ["filter", "construction", "execution"]
    text = render_markdown(summary)
    assert "| execution | `low_execution_diversity_or_improvement` | 2 |" in text


def test_worker_cost_is_unknown_without_a_price_and_counted_with_one(tmp_path: Path) -> None:
    unpriced = _summary(tmp_path / "a")
    assert unpriced["totals"]["worker_cost_usd"] is None
    assert "| worker cost | unknown (no --worker-price) |" in render_markdown(unpriced)
    free = _summary(tmp_path / "b", worker_price="0")  # said to be free: $0, not unknown
    assert free["totals"]["worker_cost_usd"] == 0.0
    assert "| worker cost (at $0 per hour) | $0.000000 |" in render_markdown(free)
