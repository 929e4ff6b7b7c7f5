"""Fixtures of the FrontierSmith tests: bundles (a small valid spec, the worked example), and
for the pipeline the scripted model on loopback, seed files and the command.
"""

from __future__ import annotations

import json
import os
import subprocess
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


def emit_env(home: Path) -> dict[str, str]:
    """The command's environment: a test key, no host state, a narrow terminal."""
    return {
        **os.environ,
        "OPENAI_API_KEY": "sk-test-key-never-written",
        "XDG_STATE_HOME": str(home / "state"),
        "COLUMNS": "160",
        "TERM": "dumb",
    }


def emit(
    venv_bin: Path, home: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), "emit", "frontiersmith", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=emit_env(home),
        cwd=home,
    )


def oracle_and_nop(venv_bin: Path, home: Path, tasks: list[Path]) -> dict[tuple[str, str], float]:
    """One `atoll run` job (one start-up): Harbor's oracle and no-op agent on every task, on
    atoll-local; the reward of each (task name, agent). Every trial must end without an error."""
    jobs = home / "jobs"
    jobs.mkdir()
    job = {
        "jobs_dir": str(jobs),
        "n_concurrent_trials": 2,
        "agents": [{"name": "oracle"}, {"name": "nop"}],
        "tasks": [{"path": str(path)} for path in tasks],
        "environment": {"import_path": "atoll.core.environments.local:LocalEnvironment"},
    }
    (home / "job.json").write_text(json.dumps(job))
    done = subprocess.run(
        [str(venv_bin / "atoll"), "run", "-c", str(home / "job.json")],
        capture_output=True, text=True, timeout=600, cwd=home,
        env={**emit_env(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rewards: dict[tuple[str, str], float] = {}
    for path in jobs.glob("*/*/result.json"):
        trial = json.loads(path.read_text())
        assert trial["exception_info"] is None, trial["exception_info"]
        key = (Path(trial["task_id"]["path"]).name, trial["agent_info"]["name"])
        rewards[key] = trial["verifier_result"]["rewards"]["reward"]
    return rewards
