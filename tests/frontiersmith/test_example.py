"""The worked example `frontiersmith-example`: a sound, current bundle whose reference scores
what its task.toml records, on the host, on atoll-local and on the private Docker engine.
"""

from __future__ import annotations

import json
from pathlib import Path

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
