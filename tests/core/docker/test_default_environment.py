"""`atoll run` without --env picks docker where the engine answers and holds the task's base image."""

from __future__ import annotations

from pathlib import Path

import pytest

from atoll.core.run_defaults import choose_environment

pytestmark = pytest.mark.docker

POLYOMINO = Path(__file__).parents[3] / "tasks" / "polyomino_packing"


def test_an_engine_with_the_base_image_means_docker(docker_host, base_image, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    choice = choose_environment(POLYOMINO)
    assert choice.name == "docker"
    assert choice.reason == f"the Docker engine at {docker_host} has {base_image}"


def test_an_engine_without_the_base_image_means_atoll_local(docker_host, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM atoll/absent:never\n")
    choice = choose_environment(tmp_path)
    assert choice.name == "atoll-local"
    assert "lacks the task's base image atoll/absent:never" in choice.reason


@pytest.mark.docker_engine_alone  # renames the egress sidecar image every Harbor trial needs
def test_a_restricted_network_needs_the_egress_sidecar_too(docker_host, base_image, monkeypatch):
    import docker

    from atoll.core.docker_engine import egress_sidecar

    monkeypatch.setenv("DOCKER_HOST", docker_host)
    client = docker.DockerClient(base_url=docker_host, timeout=30)
    sidecar = egress_sidecar.harbor_image_name(egress_sidecar.engine_platform(client))
    image_id = client.images.get(sidecar).id  # `atoll docker up` built it
    keep = "atoll/test-keep-sidecar:1"
    client.api.tag(image_id, *keep.split(":"))
    try:
        client.api.remove_image(sidecar)  # only the name goes; the image stays under `keep`
        choice = choose_environment(POLYOMINO)  # its verifier has no network
        assert choice.name == "atoll-local"
        assert "lacks Harbor's egress sidecar image" in choice.reason
        assert "`atoll docker up` builds it" in choice.reason
    finally:
        client.api.tag(image_id, *sidecar.rsplit(":", 1))
        client.api.remove_image(keep)
        client.close()
    assert choose_environment(POLYOMINO).name == "docker"
