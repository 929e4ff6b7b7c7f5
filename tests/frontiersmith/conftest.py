"""Fixtures of the FrontierSmith tests: bundles (a small valid spec, the worked example), and
for the pipeline the scripted model on loopback, seed files and the command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.frontiersmith_model import KnapsackModel, seed_lines
from support.openai_server import ScriptedOpenAIServer

from atoll.checker import Contract
from atoll.frontiersmith.bundle import BundleSpec
from atoll.frontiersmith.plugin import EXAMPLE_TASK, task_dir

TOY = Path(__file__).parents[1] / "checker" / "tasks" / "toy"


@pytest.fixture
def spec() -> BundleSpec:
    tests = TOY / "tests"
    return BundleSpec(
        name="toy",
        title="Pick a number",
        summary="Print a number in [0, 1]: it is the score.",
        statement='Print `{"x": v}` with `v` a number in [0, 1]; the score is `v`.',
        solution=(TOY / "solution" / "solution.py").read_text(),
        generator=(tests / "generator.py").read_text(),
        scorer=(tests / "scorer.py").read_text(),
        feasibility=(tests / "feasibility.py").read_text(),
        contract=Contract.from_json(json.loads((tests / "contract.json").read_text())),
        mutation="objective",
        seed_lineage={"seed": "toy-1", "family": "toy", "license": "MIT"},
        reference_reward=0.75,
        keywords=("toy",),
    )


@pytest.fixture(scope="session")
def example_dir() -> Path:
    return task_dir(EXAMPLE_TASK)


@pytest.fixture
def model() -> KnapsackModel:
    return KnapsackModel()


@pytest.fixture
def server(model: KnapsackModel) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(model.script) as running:
        yield running


@pytest.fixture
def seed_file(tmp_path: Path) -> Path:
    path = tmp_path / "seeds.jsonl"
    path.write_text(seed_lines(["s1", "s2"]))
    return path
