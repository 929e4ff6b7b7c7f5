"""`--rounds` and `--population` without trials: a task becomes a seed, the population's order.

A later round's seed is read back from a bundle written by the real bundle
writer, and its mutate request is built by the real prompt builder: what the
request carries is checked against every private file of the bundle and the
instances its generator makes. The population's ranking is applied to
outcomes shaped as the run journals them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from support.frontiersmith_model import (
    HARDENS_A_CLOSED_PROBLEM,
    KnapsackModel,
    cart_bundle_spec,
)
from support.openai_server import ScriptedOpenAIServer, stage_of

from atoll.checker import Contract
from atoll.core.ledger import Ledger
from atoll.core.llm import Endpoint, PaidChat, Prices
from atoll.frontiersmith import prompts, stages
from atoll.frontiersmith.bundle import read_bundle, write_bundle
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.lineage import Lineage, child_id, derive_seed, original
from atoll.frontiersmith.model import StageModel
from atoll.frontiersmith.outcome import Tally
from atoll.frontiersmith.population import select
from atoll.frontiersmith.protocol import MUTATIONS
from atoll.frontiersmith.rounds import Rounds
from atoll.frontiersmith.runs import RunDir, RunError
from atoll.frontiersmith.seeds import TASK_NAME_CHARS, Seed

CONTRACT = Contract(seed=11, check_seeds=(12, 13, 14))
SEED = Seed("s1", "Loading a cart", "A cart carries W kilograms; maximise value.", "t", "MIT", "p")


def _parent(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """An exported task (the real writer) and its accepted outcome, as round 1 journals it."""
    spec = cart_bundle_spec(
        CONTRACT,
        "s1",
        baseline="import json\nprint(json.dumps({'take': []}))  # baseline: take nothing\n",
    )
    write_bundle(tmp_path / "tasks" / "cart", spec)
    outcome = {
        "seed_id": "s1",
        "family": "packing",
        "status": "accepted",
        "task": {"name": "cart", "path": "tasks/cart"},
        "lineage": original(SEED).to_json(),
    }
    return tmp_path / "tasks" / "cart", outcome


def _private_lines(task: Path) -> list[str]:
    """Every line of the bundle's checker, reference and baseline long enough to be telling."""
    private = [
        *(task / "tests").glob("*.py"),
        task / "solution" / "solution.py",
        task / "solution" / "baseline.py",
    ]
    return [
        line.strip()
        for path in private
        for line in path.read_text().splitlines()
        if len(line.strip()) >= 12
    ]


def test_a_task_becomes_a_seed_of_its_public_statement_alone(tmp_path: Path) -> None:
    task, outcome = _parent(tmp_path)
    seed, lineage = derive_seed(task, outcome, 2, taken={"s1", "cart"})
    assert (seed.id, seed.title, seed.family) == (
        "cart-r2",
        "Valuable picks under a weight cap",
        "packing",
    )
    assert seed.problem == "Take items under the cap.\n"  # the bundle's statement, nothing else
    assert lineage == Lineage(round=2, root_seed="s1", parent_task="cart", parent_seed="s1")

    text = "\n".join(m["content"] for m in prompts.mutate(seed, "harden", [], 1, lineage=lineage))
    assert "Take items under the cap." in text and "task cart" in text
    assert "accepted in round 1" in text and "Harden it:" in text
    for line in _private_lines(task):
        assert line not in text, line
    namespace: dict[str, Any] = {}
    exec((task / "tests" / "generator.py").read_text(), namespace)
    for instance in namespace["generate"](CONTRACT.seed):  # the hidden cases
        assert json.dumps(instance) not in text and json.dumps(instance["items"]) not in text
    for word in ("def score", "def generate", "def is_feasible", "take nothing"):
        assert word not in text


def test_a_round_1_prompt_is_the_single_round_one() -> None:
    """A round-1 seed's request is what a run without --rounds sends."""
    assert prompts.mutate(SEED, "objective", [], 1) == prompts.mutate(
        SEED, "objective", [], 1, lineage=original(SEED)
    )
    assert "Harden" not in json.dumps(prompts.mutate(SEED, "objective", [], 1))


def test_child_names_are_task_names_of_their_own() -> None:
    assert child_id("cart", 2, set()) == "cart-r2"
    taken = {"cart-r2"}  # a seed of the run's own set is called that already
    other = child_id("cart", 2, taken)
    assert other != "cart-r2" and other.endswith("-r2") and other.startswith("cart-")
    long = "x" * TASK_NAME_CHARS
    named = child_id(long, 3, set())
    assert len(named) <= TASK_NAME_CHARS and named.endswith("-r3")
    assert named != child_id("x" * (TASK_NAME_CHARS - 1) + "y", 3, set())


def test_a_later_round_asks_to_harden_first_and_a_first_round_never() -> None:
    derived = Lineage(round=2, root_seed="s1", parent_task="s1", parent_seed="s1")
    assert stages.axes(SEED, derived) == ("harden", *MUTATIONS)
    first = stages.axes(SEED, original(SEED))
    assert "harden" not in first and sorted(first) == sorted(MUTATIONS)
    start = stages.first_axis(SEED)  # the rotation a single-round run has always had
    assert list(first) == [MUTATIONS[(start + k) % 3] for k in range(3)]


def test_harden_on_a_closed_problem_is_an_invalid_answer(tmp_path: Path) -> None:
    model = KnapsackModel({"s1": HARDENS_A_CLOSED_PROBLEM})
    with ScriptedOpenAIServer(model.script) as server:
        endpoint = Endpoint(base_url=server.base_url, model="m", max_completion_tokens=4000)
        ledger = Ledger.create(tmp_path / "l.sqlite", 10**9)
        chat = PaidChat(endpoint, Prices.of("1", "2"), ledger, api_key="k")
        stage_model = StageModel(chat, SEED.id, Tally())
        config = RunConfig(seeds="x", target=1, budget_micro=10**9, model="m")
        formulation = asyncio.run(stages.formulate(stage_model, SEED, config))
        mutates = [r.body for r in server.chat_requests() if stage_of(r.body) == "mutate"]
    assert formulation.value["mutation"] == "objective" and formulation.attempts == 2
    assert len(mutates) == 2
    assert "mutation harden is for a task of an earlier round" in json.dumps(mutates[1])
    verdicts = [r.verdict for r in ledger.receipts() if r.label == "mutate:s1"]
    assert verdicts[0].startswith("invalid: mutation harden") and verdicts[1] == "valid"
    assert stage_model.tally.invalid_outputs == 1


def _accepted(seed_id: str, root: str, share: float, distances: list[float]) -> dict[str, Any]:
    pairs = [{"samples": [0, k + 1], "mean_distance": d} for k, d in enumerate(distances)]
    return {
        "seed_id": seed_id,
        "status": "accepted",
        "task": {"name": seed_id},
        "lineage": {"round": 2 if seed_id != root else 1, "root_seed": root},
        "evidence": {
            "execution": {"execution_diversity": {"distinct_fraction": share, "pairs": pairs}}
        },
    }


def test_the_population_keeps_the_most_diverse_of_each_family() -> None:
    accepted = [
        _accepted("a", "a", 2 / 3, [0.1, 0.1]),
        _accepted("a-r2", "a", 1.0, [0.01, 0.01]),  # more pairs distinct: first, however close
        _accepted("a-r3", "a", 2 / 3, [0.3, 0.1]),  # same share as a, farther apart: before a
        _accepted("b", "b", 1 / 3, [0.0, 0.05]),
        _accepted("c-r2", "c", 0.5, [0.2]),
        _accepted("c", "c", 0.5, [0.2]),  # a tie on both measures: by name
    ]
    kept, dropped = select(accepted, 2)
    assert [k.task for k in kept] == ["a-r2", "a-r3", "b", "c", "c-r2"]
    assert [d.task for d in dropped] == ["a"]
    assert dropped[0].mean_distance == pytest.approx(0.1) and dropped[0].family == "a"
    assert [k.task for k in select(accepted, 1)[0]] == ["a-r2", "b", "c"]
    everything, none = select(accepted, 0)  # no cap
    assert len(everything) == 6 and none == []


def _exported(out: Path, name: str, root: str, round_number: int, share: float) -> dict[str, Any]:
    """A task exported under `out/tasks` by the real writer, and its accepted outcome."""
    spec = dataclasses.replace(
        cart_bundle_spec(CONTRACT, name), name=name, statement=f"Statement of {name}."
    )
    info = write_bundle(out / "tasks" / name, spec)
    outcome = _accepted(name, root, share, [share / 10])
    outcome["lineage"] = {
        "round": round_number,
        "root_seed": root,
        "parent_task": None if round_number == 1 else root,
        "parent_seed": None if round_number == 1 else root,
    }
    outcome |= {"family": "packing", "task": {"name": name, "path": f"tasks/{name}"}}
    outcome["task"]["bundle_hash"] = info.bundle_hash
    return outcome


def test_a_round_closes_once_and_a_resume_reads_the_same_decision_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = RunDir(out, "20250101-000000-00000000")
    rounds = Rounds(
        run, RunConfig(seeds="x", target=1, budget_micro=1, model="m", rounds=3, population=1)
    )
    first = [
        Seed(i, f"Seed {i}", "A cart carries W kilograms; maximise value.", "t", "MIT", "p")
        for i in ("a", "b")
    ]
    journal = {
        o["seed_id"]: o
        for o in (_exported(out, "a", "a", 1, 0.5), _exported(out, "b", "b", 1, 0.5))
    }

    closed = rounds.close(1, ["a", "b"], journal, first)
    assert closed["dropped"] == [] and [p["task"] for p in closed["population"]] == ["a", "b"]
    handed = rounds.next_seeds(1)
    assert [(s.id, s.problem) for s, _ in handed] == [
        ("a-r2", "Statement of a.\n"),
        ("b-r2", "Statement of b.\n"),
    ]
    assert [lineage.parent_task for _, lineage in handed] == ["a", "b"]

    journal["a-r2"] = _exported(out, "a-r2", "a", 2, 1.0)  # more diverse than its parent
    rounds.close(2, ["a-r2", "b-r2"], journal, first)
    record = rounds.path(2).read_bytes()
    assert sorted(p.name for p in (out / "tasks").iterdir()) == ["a-r2", "b"]
    assert read_bundle(out / "dropped" / "a").bundle_hash == journal["a"]["task"]["bundle_hash"]
    assert rounds.dropped()["a"]["dropped_after_round"] == 2
    assert [s.id for s, _ in rounds.next_seeds(2)] == ["a-r2-r3"]  # b-r2 was never accepted

    # a resume closes the round again: the same record, nothing moved twice
    rounds.close(2, ["a-r2", "b-r2"], journal, first)
    assert rounds.path(2).read_bytes() == record
    assert rounds.seed_ids(first) == ["a", "b", "a-r2", "b-r2", "a-r2-r3"]


def test_a_round_whose_task_cannot_be_read_back_does_not_close(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = RunDir(out, "20250101-000000-00000000")
    rounds = Rounds(run, RunConfig(seeds="x", target=1, budget_micro=1, model="m", rounds=2))
    journal = {"a": _exported(out, "a", "a", 1, 0.5)}
    toml = out / "tasks" / "a" / "task.toml"
    toml.write_text(toml.read_text().replace("Valuable picks", "Cheap picks"))
    with pytest.raises(RunError, match="round 1 cannot close: task a's bundle cannot be read back"):
        rounds.close(1, ["a"], journal, [])
    assert not rounds.path(1).exists()  # nothing recorded: the resume tries again


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        '{"round": 1}',
        '{"round": 2, "population": [], "dropped": [], "next_seeds": []}',
    ],
)
def test_a_damaged_round_record_is_one_clear_error(tmp_path: Path, text: str) -> None:
    run = RunDir(tmp_path / "out", "20250101-000000-00000000")
    rounds = Rounds(run, RunConfig(seeds="x", target=1, budget_micro=1, model="m", rounds=2))
    rounds.path(1).parent.mkdir(parents=True)
    rounds.path(1).write_text(text)
    with pytest.raises(RunError, match="round 1"):
        rounds.records()
