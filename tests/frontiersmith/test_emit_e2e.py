"""`atoll emit frontiersmith` end to end: the scripted model on loopback, real Harbor trials.

One collection is shared by the module, and by all the xdist workers of the
run (support/shared_build.py), so the tests only read it: five seeds, two of
which fail at different stages for scripted reasons (the filter rejects one,
the other's samples are all the same program), one whose first scorer fails
the grader's self-check and is repaired, one whose first baseline answer is
not JSON. The three emitted tasks are then run with `atoll run --agent oracle`
and must score what the run recorded; Harbor's no-op agent must score 0.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.frontiersmith_cli import emit, oracle_and_nop
from support.frontiersmith_model import (
    BAD_SCORER_ONCE,
    FILTER_REJECTS,
    INVALID_BASELINE_ONCE,
    SAME_SAMPLES,
    KnapsackModel,
    seed_lines,
)
from support.openai_server import ScriptedOpenAIServer, stage_of
from support.shared_build import copied, run_root, shared_build

from atoll.core.durable import canonical_json
from atoll.core.ledger import Ledger, State
from atoll.frontiersmith.bundle import read_bundle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

KEY = "sk-test-key-never-written"
BEHAVIOURS = {
    "s2": BAD_SCORER_ONCE,
    "s3": INVALID_BASELINE_ONCE,
    "s4": FILTER_REJECTS,
    "s5": SAME_SAMPLES,
}


def flags(server: ScriptedOpenAIServer, seeds: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--seeds", str(seeds), "--target", "3", "--budget", "5", "--model", "scripted",
        "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
        "--environment", "atoll-local", "--out", str(out), *extra,
    ]  # fmt: skip


def _collect(venv_bin: Path, home: Path) -> dict[str, Any]:
    """The collection, built once for all the workers of the run; the record holds what the
    tests read besides the files."""
    seeds = home / "seeds.jsonl"
    seeds.write_text(seed_lines(["s1", "s2", "s3", "s4", "s5"]))
    model = KnapsackModel(BEHAVIOURS)
    with ScriptedOpenAIServer(model.script) as server:
        done = emit(
            venv_bin,
            home,
            *flags(
                server,
                seeds,
                home / "out",
                "--workers",
                "2",
                "--rollout-tasks",
                "1",
                "--rollout-agent",
                "oracle",
            ),  # fmt: skip
        )
        bodies = [r.body for r in server.chat_requests()]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return {"output": done.stdout + done.stderr, "request_bodies": bodies}


@pytest.fixture(scope="module")
def collection(venv_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Shared by every worker (support/shared_build.py): the tests only read it."""
    built = shared_build(
        run_root(tmp_path_factory), "emit-e2e", lambda home: _collect(venv_bin, home)
    )
    out = built.files / "out"
    summary = json.loads((out / "run.json").read_text())
    yield {**built.record, "out": out, "summary": summary, "home": built.files}
    built.assert_unchanged()


def test_three_tasks_from_five_seeds(collection: Any) -> None:
    summary, out = collection["summary"], collection["out"]
    assert summary["totals"]["accepted"] == 3
    assert sorted(a["seed_id"] for a in summary["accepted"]) == ["s1", "s2", "s3"]
    skipped = {s["seed_id"]: (s["reason"], s["stage"]) for s in summary["skipped"]}
    assert skipped == {
        "s4": ("formulation_rejected", "filter"),
        "s5": ("low_execution_diversity_or_improvement", "execution"),
    }
    assert summary["funnel"]["divergence"] == 4 and summary["funnel"]["export"] == 3
    assert sorted(p.name for p in (out / "tasks").iterdir()) == ["s1", "s2", "s3"]
    for accepted in summary["accepted"]:
        bundle = read_bundle(out / accepted["task"]["path"])
        assert bundle.bundle_hash == accepted["task"]["bundle_hash"]
        metadata = tomllib.loads((bundle.path / "task.toml").read_text())["metadata"]
        assert metadata["verification"] == "unverified"
        assert metadata["verification_stage"] == "construction"
        assert metadata["seed_lineage"]["seed_id"] == accepted["seed_id"]
        trials = accepted["evidence"]["execution"]["trials"]
        assert trials["nop"]["reward"] == 0.0 and trials["empty-answer"]["reward"] == 0.0
        assert (
            trials["reference"]["scores"]
            == trials[f"sample-{accepted['evidence']['execution']['reference_sample']}"]["scores"]
        )
        assert accepted["task"]["reference_reward"] > accepted["task"]["baseline_reward"]
        diversity = accepted["evidence"]["execution"]["execution_diversity"]
        assert len(diversity["pairs"]) == 3 and diversity["distinct_fraction"] >= 0.3
        assert (diversity["min_score_spread"], diversity["min_execution_diversity"]) == (0.001, 0.3)


def test_one_dry_run_rollout_is_scored_apart(collection: Any) -> None:
    """`--rollout-agent oracle`: a Harbor trial of the exported task scores its reference."""
    rolled = [a for a in collection["summary"]["accepted"] if a["rollout"]]
    assert len(rolled) == 1
    (task,) = rolled
    assert (task["rollout"]["status"], task["rollout"]["agent"]) == ("scored", "oracle")
    assert task["rollout"]["reward"] == task["task"]["reference_reward"]


def test_repairs_and_invalid_answers_are_counted(collection: Any) -> None:
    summary = collection["summary"]
    by_seed = {a["seed_id"]: a for a in summary["accepted"]}
    assert by_seed["s2"]["evidence"]["construction"]["rounds"] == 2
    assert (
        "scorer gives 0 to infeasible outputs"
        in by_seed["s2"]["evidence"]["construction"]["failed_rounds"][0][0]
    )
    assert by_seed["s3"]["tally"]["invalid_outputs"] == 1
    assert summary["totals"]["invalid_outputs"] == 1


def test_nothing_was_paid_twice_and_money_adds_up(collection: Any, tmp_path: Path) -> None:
    bodies = [canonical_json(body) for body in collection["request_bodies"]]
    assert len(bodies) == len(set(bodies))
    run_dir = next((collection["out"] / "runs").iterdir())
    with Ledger.open(copied(run_dir / "ledger.sqlite", tmp_path)) as ledger:
        receipts = ledger.receipts()
        totals = ledger.totals()
    assert len(receipts) == len(bodies)
    assert {r.state for r in receipts} == {State.ANSWERED}
    assert totals.spent_micro == sum(r.cost_micro or 0 for r in receipts)
    assert collection["summary"]["totals"]["token_cost_usd"] == totals.spent_micro / 1e6
    # every request was one strict json_schema request named by its stage
    assert {stage_of(body) for body in collection["request_bodies"]} == {
        "mutate", "filter", "baseline", "solve", "divergence",
        "generator", "scorer", "feasibility", "review",
    }  # fmt: skip


def test_report_plots_and_no_key_anywhere(collection: Any) -> None:
    out = collection["out"]
    report = (out / "report.md").read_text()
    assert "formulation_rejected" in report and "[s1](tasks/s1)" in report
    assert "at least 0.3 of the feasible sample pairs are distinct in execution" in report
    assert "mean per-case score distance is at least 0.001" in report
    assert "| worker cost | unknown (no --worker-price) |" in report  # not $0
    assert "unknown (no --worker-price)" in collection["output"]
    assert "| of which synthesis requests | $" in report
    for plot in ("funnel.png", "rejections.png", "cost_per_task.png"):
        assert (out / "plots" / plot).read_bytes().startswith(b"\x89PNG")
    assert KEY not in collection["output"]
    for path in [*out.rglob("*"), *(collection["home"] / "state").rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_emitted_tasks_score_as_recorded_and_a_noop_scores_zero(
    collection: Any, venv_bin: Path, tmp_path: Path
) -> None:
    """One `atoll run` job (one start-up): the oracle and the no-op agent on every emitted task.

    Its jobs and state go to a home of its own: the collection's is shared and only read."""
    out = collection["out"]
    recorded = {
        a["task"]["name"]: a["task"]["reference_reward"] for a in collection["summary"]["accepted"]
    }
    rewards = oracle_and_nop(venv_bin, tmp_path, sorted((out / "tasks").iterdir()))
    assert rewards == {
        **{(name, "oracle"): reward for name, reward in recorded.items()},
        **{(name, "nop"): 0.0 for name in recorded},
    }
