"""The model stages against the scripted model on loopback, with a real ledger (no trials).

What each stage may see, what it is told when it repeats, and what an
invalid answer costs are the method's rules; these tests read them off the
requests the server received and the receipts the ledger kept.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.frontiersmith_model import (
    BAD_SCORER,
    BAD_SCORER_ONCE,
    EXAMPLE_SCORE_WRONG,
    FILTER_REJECTS,
    GENERATOR_WITH_OPTIMUM,
    INVALID_BASELINE_ONCE,
    LOW_DIVERGENCE,
    OPTIMUM_ONCE,
    PLAINLY_REWARDS_EMPTY,
    SCORER_FRAGILE_ONCE,
    SCORER_OUT_OF_RANGE_ALWAYS,
    SCORER_TRUSTS_INDICES,
    KnapsackModel,
    is_repair,
)
from support.openai_server import ScriptedOpenAIServer, stage_of

from atoll.core.ledger import Ledger
from atoll.core.llm import Endpoint, PaidChat, Prices
from atoll.frontiersmith import prompts, stages
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.model import StageModel
from atoll.frontiersmith.outcome import Reason, Rejected, Tally
from atoll.frontiersmith.seeds import Seed
from atoll.frontiersmith.taskcode import SandboxedChecks

SEED = Seed(
    "s1",
    "Loading a cart",
    "A cart carries W kilograms of parcels; maximise value.",
    "t",
    "MIT",
    "packing",
)


def _config(**kw) -> RunConfig:
    return RunConfig(
        seeds="x", target=1, budget_micro=10**9, model="m", price_in="1", price_out="2", **kw
    )


def _model(server: ScriptedOpenAIServer, tmp_path: Path) -> StageModel:
    endpoint = Endpoint(base_url=server.base_url, model="m", max_completion_tokens=4000)
    chat = PaidChat(
        endpoint, Prices.of("1", "2"), Ledger.create(tmp_path / "l.sqlite", 10**9), api_key="k"
    )
    return StageModel(chat, SEED.id, Tally())


def _bodies(server: ScriptedOpenAIServer, stage: str) -> list[dict]:
    return [r.body for r in server.chat_requests() if stage_of(r.body) == stage]


def _text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def test_filter_sees_no_author_reasoning_and_its_findings_feed_the_next_attempt(
    tmp_path: Path,
) -> None:
    model = KnapsackModel({"s1": FILTER_REJECTS})
    with ScriptedOpenAIServer(model.script) as server:
        stage_model = _model(server, tmp_path)
        with pytest.raises(Rejected) as rejected:
            asyncio.run(stages.formulate(stage_model, SEED, _config(max_repairs=1)))
    assert rejected.value.reason is Reason.FORMULATION_REJECTED
    filters = _bodies(server, "filter")
    mutates = _bodies(server, "mutate")
    assert len(filters) == 2 and len(mutates) == 2
    assert "why_open_ended" not in _text(filters[0]) and "every other item" not in _text(filters[0])
    assert "no fixed rule reaches it" not in _text(filters[0])  # the author's why_open_ended
    assert "rewards taking nothing on empty instances" in _text(mutates[1])
    assert "rewards taking nothing" not in _text(mutates[0])
    axes = [
        next(a for a in prompts.MUTATION_AXES if f"preferably {a}" in _text(b)) for b in mutates
    ]
    assert axes[0] != axes[1]  # the axis rotates between attempts
    for body in filters + mutates:
        schema = body["response_format"]
        assert schema["type"] == "json_schema" and schema["json_schema"]["strict"] is True


def test_invalid_answer_is_charged_recorded_and_counted_against_repairs(tmp_path: Path) -> None:
    model = KnapsackModel({"s1": INVALID_BASELINE_ONCE})
    with ScriptedOpenAIServer(model.script) as server:
        stage_model = _model(server, tmp_path)
        formulation = stages.Formulation(
            model.mutate({"messages": [{"content": "Seed problem s1 "}]}), 1, []
        )
        programs = asyncio.run(stages.write_programs(stage_model, formulation, _config()))
    assert "exhaustive" in [s["strategy"] for s in programs.samples]
    first, repair = _bodies(server, "baseline")
    assert repair["messages"][-2] == {
        "role": "assistant",
        "content": "here is my program: print(1)",
    }
    assert "not JSON" in repair["messages"][-1]["content"]
    invalid = [
        r for r in stage_model.chat.ledger.receipts() if (r.verdict or "").startswith("invalid")
    ]
    assert len(invalid) == 1 and invalid[0].cost_micro and invalid[0].cost_micro > 0
    assert stage_model.tally.invalid_outputs == 1 and stage_model.tally.repairs == 1
    # the three samples were asked with the three rotating strategy hints
    solves = [_text(b) for b in _bodies(server, "solve")]
    for hint in prompts.STRATEGY_HINTS:
        assert sum(hint in text for text in solves) == 1


def test_repairs_run_out(tmp_path: Path) -> None:
    script = KnapsackModel().script
    script.answers["baseline"] = "never json"
    with ScriptedOpenAIServer(script) as server:
        stage_model = _model(server, tmp_path)
        with pytest.raises(Rejected) as rejected:
            asyncio.run(
                stage_model.ask_valid("baseline", [{"role": "user", "content": "x"}], repairs=2)
            )
    assert rejected.value.reason is Reason.INVALID_MODEL_OUTPUT
    assert len(_bodies(server, "baseline")) == 3


def test_low_divergence_rejects_before_any_construction(tmp_path: Path) -> None:
    model = KnapsackModel({"s1": LOW_DIVERGENCE})
    with ScriptedOpenAIServer(model.script) as server:
        stage_model = _model(server, tmp_path)
        samples = [{"strategy": "greedy [seed s1]", "code": "print(1)"}] * 3
        programs = stages.Programs({"strategy": "b", "code": "print(0)"}, samples)
        with pytest.raises(Rejected) as rejected:
            asyncio.run(stages.judge_divergence(stage_model, programs, _config()))
    assert rejected.value.reason is Reason.LOW_SEMANTIC_DIVERGENCE
    assert rejected.value.evidence["fraction"] == 0.0
    assert _bodies(server, "generator") == []


@pytest.mark.slow
def test_construction_repair_carries_the_evidence_and_the_previous_code(tmp_path: Path) -> None:
    model = KnapsackModel({"s1": BAD_SCORER_ONCE})
    with ScriptedOpenAIServer(model.script) as server:
        stage_model = _model(server, tmp_path)
        formulation = stages.Formulation(
            json.loads(json.dumps(model.mutate({"messages": [{"content": "Seed problem s1 "}]}))),
            1,
            [],
        )
        built = asyncio.run(
            stages.construct(
                stage_model, formulation, _config(), SandboxedChecks(), "s1", lambda what: None
            )
        )
    assert built.rounds == 2
    assert "scorer gives 0 to infeasible outputs" in built.findings[0][0]
    first, repair = _bodies(server, "scorer")
    assert json.loads(repair["messages"][-2]["content"]) == {"code": BAD_SCORER}
    assert "scorer gives 0 to infeasible outputs" in repair["messages"][-1]["content"]
    assert len(_bodies(server, "generator")) == 1  # only the implicated file is rewritten
    assert len(_bodies(server, "review")) == 2
    assert built.contract["examples"][0]["name"] == "nothing taken"
    assert stage_model.tally.repairs == 1


def _construct_with(behaviour: str, tmp_path: Path) -> Rejected:
    model = KnapsackModel({"s1": behaviour})
    with ScriptedOpenAIServer(model.script) as server:
        stage_model = _model(server, tmp_path)
        formulation = stages.Formulation(
            json.loads(json.dumps(model.mutate({"messages": [{"content": "Seed problem s1 "}]}))),
            1,
            [],
        )
        with pytest.raises(Rejected) as rejected:
            asyncio.run(
                stages.construct(
                    stage_model,
                    formulation,
                    _config(max_repairs=1),
                    SandboxedChecks(),
                    "s1",
                    lambda what: None,
                )
            )
    return rejected.value


@pytest.mark.slow
def test_a_plain_scorer_rewarding_an_empty_answer_is_rejected_noop_not_zero(tmp_path: Path) -> None:
    rejected = _construct_with(PLAINLY_REWARDS_EMPTY, tmp_path)
    assert (rejected.stage, rejected.reason) == ("construction", Reason.NOOP_NOT_ZERO)
    assert "gives an empty answer ({}) 0.5, not exactly 0" in rejected.detail
    assert "malformed output {}" in rejected.detail  # the self-check's own finding, kept


@pytest.mark.slow
def test_a_broken_scorer_that_gives_an_empty_answer_0_runs_out_of_repairs(tmp_path: Path) -> None:
    rejected = _construct_with(SCORER_OUT_OF_RANGE_ALWAYS, tmp_path)
    assert (rejected.stage, rejected.reason) == (
        "construction",
        Reason.INFRASTRUCTURE_REPAIR_EXHAUSTED,
    )
    assert "scorer is in [0, 1]" in rejected.detail


@pytest.mark.slow
def test_construction_shows_the_scorer_returns_a_verdict_on_fuzzed_outputs(tmp_path: Path) -> None:
    """A scorer that passes the grader's self-check but raises on a mistyped index (what a
    submission may print) is found before acceptance and repaired with the fuzzed output."""
    model = KnapsackModel({"s1": SCORER_FRAGILE_ONCE})
    with ScriptedOpenAIServer(model.script) as server:
        stage_model = _model(server, tmp_path)
        formulation = stages.Formulation(
            json.loads(json.dumps(model.mutate({"messages": [{"content": "Seed problem s1 "}]}))),
            1,
            [],
        )
        built = asyncio.run(
            stages.construct(
                stage_model, formulation, _config(), SandboxedChecks(), "s1", lambda what: None
            )
        )
    assert KnapsackModel().kit.scorer != SCORER_TRUSTS_INDICES
    assert built.rounds == 2 and built.repairs == 1
    (finding,) = built.findings[0]
    assert finding.startswith("scorer runs: TypeError")
    assert "the fuzzed output of example 'nothing taken' with" in finding
    first, repair = _bodies(server, "scorer")
    assert json.loads(repair["messages"][-2]["content"]) == {"code": SCORER_TRUSTS_INDICES}
    assert "fuzzed output" in repair["messages"][-1]["content"]


def _construct(model: KnapsackModel, tmp_path: Path, **config) -> tuple:
    """construct() for seed s1 against `model`: (the Construction or the Rejected, the server)."""
    with ScriptedOpenAIServer(model.script) as server:
        stage_model = _model(server, tmp_path)
        formulation = stages.Formulation(
            json.loads(json.dumps(model.mutate({"messages": [{"content": "Seed problem s1 "}]}))),
            1,
            [],
        )
        try:
            built = asyncio.run(
                stages.construct(
                    stage_model,
                    formulation,
                    _config(**config),
                    SandboxedChecks(),
                    "s1",
                    lambda what: None,
                )
            )
        except Rejected as rejected:
            return rejected, server
    return built, server


@pytest.mark.slow
def test_a_checker_that_disagrees_with_the_published_example_is_repaired_then_refused(
    tmp_path: Path,
) -> None:
    rejected, server = _construct(
        KnapsackModel({"s1": EXAMPLE_SCORE_WRONG}), tmp_path, max_repairs=1
    )
    assert isinstance(rejected, Rejected)
    assert (rejected.stage, rejected.reason) == (
        "construction",
        Reason.EXAMPLE_DISAGREES_WITH_CHECKER,
    )
    assert "example 'published example', which scores 0.7" in rejected.detail
    first, repair = _bodies(server, "scorer")
    assert "the task's scorer and validator must reproduce it" in repair["messages"][-1]["content"]
    assert len(_bodies(server, "generator")) == 1  # the generator's own examples were right


@pytest.mark.slow
def test_instances_carrying_an_optimum_the_scorer_reads_are_refused(tmp_path: Path) -> None:
    built, server = _construct(KnapsackModel({"s1": OPTIMUM_ONCE}), tmp_path)
    assert not isinstance(built, Rejected), built
    assert built.rounds == 2
    (finding,) = built.findings[0]  # the scripted review approves: the check alone finds it
    assert finding.startswith("instances carry no precomputed optimum the scorer reads: ")
    assert "'best_value'" in finding
    generators, scorers = _bodies(server, "generator"), _bodies(server, "scorer")
    assert [is_repair(b) for b in generators] == [False, True]
    assert [is_repair(b) for b in scorers] == [False, True]
    assert json.loads(generators[1]["messages"][-2]["content"]) == {"code": GENERATOR_WITH_OPTIMUM}
    review = _text(_bodies(server, "review")[0])
    assert "must not carry a precomputed optimum" in review
    assert built.contract["examples"][-1]["name"] == "published example"
