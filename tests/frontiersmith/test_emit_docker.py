"""`atoll emit frontiersmith --environment docker`: the same pipeline, trials in the private engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.engine import docker_engine
from support.frontiersmith_cli import emit
from support.frontiersmith_model import KnapsackModel, seed_lines
from support.openai_server import ScriptedOpenAIServer

from atoll.frontiersmith.bundle import OFFLINE_BASE_IMAGE, read_bundle

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(900)]


def test_one_task_through_docker_trials(venv_bin: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_engine())
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["d1"]))
    out = tmp_path / "out"
    with ScriptedOpenAIServer(KnapsackModel().script) as server:
        done = emit(
            venv_bin, tmp_path,
            "--seeds", str(seeds), "--target", "1", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "docker", "--solutions", "2", "--base-image", OFFLINE_BASE_IMAGE,
            "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    summary = json.loads((out / "run.json").read_text())
    (task,) = summary["accepted"]
    trials = task["evidence"]["execution"]["trials"]
    assert set(trials) == {
        "nop",
        "empty-answer",
        "silent-answer",
        "baseline",
        "sample-0",
        "sample-1",
        "reference",
    }
    assert trials["nop"]["reward"] == 0.0
    best = task["evidence"]["execution"]["reference_sample"]
    assert trials["reference"]["scores"] == trials[f"sample-{best}"]["scores"]
    bundle = read_bundle(out / task["task"]["path"])
    assert f"FROM {OFFLINE_BASE_IMAGE}" in (bundle.path / "environment" / "Dockerfile").read_text()
    assert summary["config"]["environment"] == "docker"


def test_an_image_that_fails_to_build_is_an_infrastructure_error(
    venv_bin: Path, tmp_path: Path, monkeypatch
) -> None:
    """No engine can pull this image: the seed ends in an error (retried on resume), not a
    rejection, and nothing is exported."""
    monkeypatch.setenv("DOCKER_HOST", docker_engine())
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["i1"]))
    out = tmp_path / "out"
    with ScriptedOpenAIServer(KnapsackModel().script) as server:
        done = emit(
            venv_bin, tmp_path,
            "--seeds", str(seeds), "--target", "1", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "docker", "--solutions", "2",
            "--base-image", "registry.invalid/atoll-no-such-image:1", "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    summary = json.loads((out / "run.json").read_text())
    (skipped,) = summary["skipped"]
    assert (skipped["status"], skipped["reason"], skipped["stage"]) == (
        "error",
        "execution_error",
        "execution",
    )
    assert summary["rejections"] == {} and summary["totals"]["accepted"] == 0
    assert not (out / "tasks").exists() or list((out / "tasks").iterdir()) == []


def test_a_cpp_task_through_docker_trials(venv_bin: Path, tmp_path: Path, monkeypatch) -> None:
    """`--language cpp` in the engine: the image's g++ compiles, the reference repeats."""
    from support.frontiersmith_model import CPP_KNAPSACK

    monkeypatch.setenv("DOCKER_HOST", docker_engine())
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["dc1"]))
    out = tmp_path / "out"
    with ScriptedOpenAIServer(KnapsackModel(kit=CPP_KNAPSACK).script) as server:
        done = emit(
            venv_bin, tmp_path,
            "--seeds", str(seeds), "--target", "1", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "docker", "--solutions", "2", "--base-image", OFFLINE_BASE_IMAGE,
            "--language", "cpp", "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    summary = json.loads((out / "run.json").read_text())
    (task,) = summary["accepted"]
    trials = task["evidence"]["execution"]["trials"]
    assert trials["nop"]["reward"] == trials["empty-answer"]["reward"] == 0.0
    best = task["evidence"]["execution"]["reference_sample"]
    assert trials["reference"]["scores"] == trials[f"sample-{best}"]["scores"]
    assert trials["reference"]["reward"] > trials["baseline"]["reward"] > 0
    bundle = read_bundle(out / task["task"]["path"])
    assert bundle.spec.language == "cpp"
    assert "g++" in (bundle.path / "environment" / "Dockerfile").read_text()
