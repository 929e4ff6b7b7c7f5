"""Where the execution trials run by default: where `atoll run` would run the emitted task."""

from __future__ import annotations

import pytest
from support.engine import docker_engine

from atoll.frontiersmith.bundle import DEFAULT_BASE_IMAGE, OFFLINE_BASE_IMAGE
from atoll.frontiersmith.preparation import choose_trial_environment


def test_without_an_engine_the_trials_run_on_atoll_local(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    name, why = choose_trial_environment(DEFAULT_BASE_IMAGE)
    assert name == "atoll-local"
    assert "no Docker engine answers" in why and "host's python3" in why


@pytest.mark.docker
def test_an_engine_with_the_bundle_image_runs_the_trials_in_docker(monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_engine())
    name, why = choose_trial_environment(OFFLINE_BASE_IMAGE)
    assert (name, OFFLINE_BASE_IMAGE in why) == ("docker", True)
    assert "bundle's own image" in why


@pytest.mark.docker
def test_an_engine_without_the_bundle_image_leaves_the_trials_on_atoll_local(monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_engine())
    name, why = choose_trial_environment("registry.invalid/no-such-image:1")
    assert name == "atoll-local" and "lacks the task's base image" in why
