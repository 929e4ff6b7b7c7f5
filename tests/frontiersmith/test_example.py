"""The worked example `frontiersmith-example`: a sound, current bundle whose reference scores
what its task.toml records, on the host, on atoll-local and on the private Docker engine.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from support.engine import docker_engine
from support.trials import atoll_run, verifier_json

from atoll.checker import grade_task, self_check
from atoll.core.registry import load
from atoll.frontiersmith.bundle import OFFLINE_BASE_IMAGE, read_bundle, render_bundle


def test_registered_and_sound(example_dir):
    assert load().task_dir("frontiersmith-example") == example_dir
    bundle = read_bundle(example_dir)
    assert bundle.spec.base_image == OFFLINE_BASE_IMAGE  # runs on the offline engine
    assert bundle.task_toml["metadata"]["recipe"] == "frontiersmith"


def test_written_by_this_version(example_dir):
    """Fails after a change to the grader or the templates until the example is rewritten."""
    bundle = read_bundle(example_dir)
    _, fresh = render_bundle(bundle.spec)
    assert fresh == bundle.bundle_hash, (
        "tasks/frontiersmith-example is stale: run scripts/refresh_frontiersmith_example.py"
    )


def test_self_checks_pass(example_dir):
    report = self_check(example_dir / "tests")
    assert report.ok, report.failures
    assert 8 <= len(report.instances) <= 16


def _lit_over_open(instance: dict[str, Any], plan: Any) -> Fraction:
    """A plan's score by the statement's rule (instruction.md, "Feasibility" and "Score"),
    written from the text alone: the task's scorer and validator are what it checks."""
    rows, cost = instance["rows"], instance["cost"]
    open_cells = {(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "."}
    beacons = plan["beacons"] if isinstance(plan, dict) else None
    if not isinstance(beacons, list):
        return Fraction(0)
    cells = []
    for pair in beacons:
        if not (isinstance(pair, list) and len(pair) == 2):
            return Fraction(0)
        if not all(type(v) is int for v in pair) or tuple(pair) not in open_cells:
            return Fraction(0)
        cells.append((pair[0], pair[1]))
    if len(set(cells)) != len(cells) or sum(cost[r][c] for r, c in cells) > instance["budget"]:
        return Fraction(0)
    lit = set(cells)
    for r, c in cells:
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            for step in range(1, instance["radius"] + 1):
                cell = (r + dr * step, c + dc * step)
                if cell not in open_cells:  # a wall or the edge stops the beam
                    break
                lit.add(cell)
    return Fraction(len(lit), len(open_cells))


def _reference_scores_by_the_statement(example: Path) -> list[Fraction]:
    """Each graded instance's score for the reference, found without the grader: the grading
    seed (tests/contract.json) through the task's generator, the reference program run on
    each instance directly, its plan scored by `_lit_over_open`."""
    seed = json.loads((example / "tests" / "contract.json").read_text())["seed"]
    spec = importlib.util.spec_from_file_location(
        "example_generator", example / "tests/generator.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    scores = []
    for instance in generator.generate(seed):
        done = subprocess.run(
            [sys.executable, "-I", str(example / "solution" / "solution.py")],
            input=json.dumps(instance), capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        scores.append(_lit_over_open(instance, json.loads(done.stdout)))
    return scores


def test_the_recorded_reference_reward_is_what_the_statement_gives(example_dir):
    """task.toml's reference_reward (0.5929397659864805) was recorded by grading the reference
    with atoll's own grader; here it is held to the statement's rule instead: the exact mean
    of lit / open over the 12 instances of the grading seed (128/196, 413/606, ... 340/418)."""
    scores = _reference_scores_by_the_statement(example_dir)
    assert len(scores) == 12 and all(0 < s < 1 for s in scores)
    recorded = read_bundle(example_dir).spec.reference_reward
    # The grader adds the rounded per-case floats (math.fsum): within an ulp or two of the
    # exact mean, which a refresh may land on either side of.
    assert recorded == pytest.approx(float(sum(scores) / len(scores)), rel=1e-15, abs=0)


@pytest.fixture
def copy_of_example(example_dir, tmp_path) -> Path:
    import shutil

    destination = tmp_path / "example"
    shutil.copytree(example_dir, destination)
    return destination


@pytest.mark.slow
def test_reference_reward_on_the_host(copy_of_example):
    recorded = read_bundle(copy_of_example).spec.reference_reward
    report = grade_task(copy_of_example, copy_of_example / "solution" / "solution.py")
    assert report.statuses == ["ok"] * len(report.cases)
    assert report.scores == [float(s) for s in _reference_scores_by_the_statement(copy_of_example)]
    assert report.reward == recorded
    assert 0 < report.reward < 1  # open-ended: the reference does not light every cell


@pytest.mark.slow
def test_trivial_programs_score_exactly_zero(copy_of_example, tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("import json\nprint(json.dumps({'beacons': []}))\n")
    silent = tmp_path / "silent.py"
    silent.write_text("pass\n")
    assert grade_task(copy_of_example, empty).reward == 0.0
    assert grade_task(copy_of_example, silent).reward == 0.0
    assert grade_task(copy_of_example, tmp_path / "absent.py").reward == 0.0


@pytest.mark.slow
def test_oracle_and_nop_on_atoll_local(example_dir, tmp_path):
    recorded = read_bundle(example_dir).spec.reference_reward
    oracle = atoll_run(
        tmp_path / "oracle", agent="oracle", env="atoll-local", task="frontiersmith-example"
    )
    assert verifier_json(oracle, "reward.json") == {"reward": recorded}
    scores = verifier_json(oracle, "scores.json")
    assert scores["isolation"]["uid"] != 0 and scores["counts"]["ok"] == len(scores["cases"])
    nop = atoll_run(tmp_path / "nop", agent="nop", env="atoll-local", task="frontiersmith-example")
    assert verifier_json(nop, "reward.json") == {"reward": 0.0}
    assert verifier_json(nop, "scores.json")["submission"]["reason"] == "no submission file"


@pytest.mark.slow
@pytest.mark.docker
def test_oracle_and_nop_on_docker(example_dir, tmp_path):
    host = docker_engine()
    recorded = read_bundle(example_dir).spec.reference_reward
    oracle = atoll_run(
        tmp_path / "oracle",
        agent="oracle",
        env="docker",
        task="frontiersmith-example",
        docker_host=host,
    )
    assert verifier_json(oracle, "reward.json") == {"reward": recorded}
    nop = atoll_run(
        tmp_path / "nop", agent="nop", env="docker", task="frontiersmith-example", docker_host=host
    )
    assert verifier_json(nop, "reward.json") == {"reward": 0.0}
    assert (
        json.loads((oracle / "verifier" / "scores.json").read_text())["isolation"]["uid"] >= 10**9
    )
