"""A published formula with no feasible zero, and a no-op check that can fail.

Bin packing scored `ceil(sum(sizes) / capacity) / len(bins)` (a ratio to a
lower bound, the most common optimization score) gives every feasible
packing a score above 0: only the no-op must score 0. One campaign, two
seeds: r1 has the honest scorer and is accepted; r2's scorer and validator
give an empty answer 0.5 except while the grader's malformed-output check
is looking, so only the empty-answer trial (`{}` through the real grader)
can catch it, and it is rejected `noop_not_zero`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.frontiersmith_cli import emit, oracle_and_nop
from support.frontiersmith_model import BIN_PACKING, REWARDS_EMPTY, KnapsackModel, seed_lines
from support.openai_server import ScriptedOpenAIServer

from atoll.frontiersmith.bundle import read_bundle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_a_ratio_to_bound_campaign_is_accepted_and_an_empty_answer_reward_is_caught(
    venv_bin: Path, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["r1", "r2"]))
    out = tmp_path / "out"
    model = KnapsackModel({"r2": REWARDS_EMPTY}, kit=BIN_PACKING)
    with ScriptedOpenAIServer(model.script) as server:
        done = emit(
            venv_bin, tmp_path,
            "--seeds", str(seeds), "--target", "2", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "atoll-local", "--workers", "2", "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    summary = json.loads((out / "run.json").read_text())

    (accepted,) = summary["accepted"]
    assert accepted["seed_id"] == "r1"
    contract = read_bundle(out / accepted["task"]["path"]).spec.contract
    assert [(e.name, e.score) for e in contract.examples if e.feasible] == [
        ("one item per bin", 2 / 3),
        ("pairs that fit", 1.0),
        ("published example", 1.0),  # the instruction's worked example, checked too
    ]  # no feasible zero
    trials = accepted["evidence"]["execution"]["trials"]
    assert trials["nop"]["reward"] == 0.0 and trials["empty-answer"]["reward"] == 0.0
    assert set(trials["empty-answer"]["statuses"]) == {"infeasible"}
    assert trials["silent-answer"]["reward"] == 0.0  # prints nothing: malformed, scored 0
    assert set(trials["silent-answer"]["statuses"]) == {"malformed"}
    assert min(trials["baseline"]["scores"]) > 0  # every feasible packing scores above 0
    assert accepted["task"]["reference_reward"] > accepted["task"]["baseline_reward"]

    (skipped,) = summary["skipped"]
    assert (skipped["seed_id"], skipped["reason"], skipped["stage"]) == (
        "r2",
        "noop_not_zero",
        "execution",
    )
    assert "an empty answer scored 0.5" in skipped["detail"]

    rewards = oracle_and_nop(venv_bin, tmp_path, [out / accepted["task"]["path"]])
    assert rewards == {("r1", "oracle"): accepted["task"]["reference_reward"], ("r1", "nop"): 0.0}
