"""Where the private engine lives, and the Compose link; no engine needed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from atoll.core.docker_engine import EngineError, EnginePaths
from atoll.core.docker_engine.compose import compose_binary, link_compose


def test_defaults_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ATOLL_DOCKER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ATOLL_DOCKER_RUN_DIR", "/tmp/atoll-x")
    paths = EnginePaths.from_options()
    assert paths.data_root == tmp_path / "state" / "data"
    assert paths.docker_host == "unix:///tmp/atoll-x/docker.sock"


def test_default_run_dir_is_short_enough_for_a_socket(monkeypatch, tmp_path):
    monkeypatch.delenv("ATOLL_DOCKER_RUN_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    paths = EnginePaths.from_options(state_dir=tmp_path)
    assert paths.socket == Path(f"/tmp/atoll-docker-{os.getuid()}/docker.sock")


def test_a_socket_path_too_long_is_refused(tmp_path):
    with pytest.raises(EngineError, match="choose a shorter --run-dir"):
        EnginePaths.from_options(tmp_path, tmp_path / ("x" * 120))


def test_compose_is_linked_once_and_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "config"))
    first = link_compose(tmp_path / "store")
    assert first.changed and first.link.resolve() == first.binary
    again = link_compose(tmp_path / "store")
    assert not again.changed
    version = subprocess.run([str(first.link), "version"], capture_output=True, text=True)
    assert "Docker Compose version" in version.stdout


def test_the_link_outlives_the_environment_it_came_from(monkeypatch, tmp_path):
    """The link names a stored copy, so removing a checkout's venv leaves Compose working."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "config"))
    result = link_compose(tmp_path / "store")
    target = result.link.resolve()
    assert target.parent == tmp_path / "store"
    assert target != compose_binary()
    assert target.read_bytes() == compose_binary().read_bytes()
    assert os.access(target, os.X_OK)


def test_a_link_into_a_removed_environment_is_repaired(monkeypatch, tmp_path):
    plugins = tmp_path / "config" / "cli-plugins"
    plugins.mkdir(parents=True)
    (plugins / "docker-compose").symlink_to(tmp_path / "gone" / ".venv" / "bin" / "docker-compose")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "config"))
    result = link_compose(tmp_path / "store")
    assert result.changed
    version = subprocess.run([str(result.link), "version"], capture_output=True, text=True)
    assert "Docker Compose version" in version.stdout


def test_a_users_own_compose_is_left_alone(monkeypatch, tmp_path):
    plugins = tmp_path / "config" / "cli-plugins"
    plugins.mkdir(parents=True)
    own = plugins / "docker-compose"
    own.write_text("#!/bin/sh\necho mine\n")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "config"))
    result = link_compose(tmp_path / "store")
    assert not result.changed
    assert not own.is_symlink() and own.read_text().endswith("mine\n")


def test_a_new_package_list_names_a_new_rootfs_cache(tmp_path):
    from atoll.core.docker_engine import base_image

    paths = EnginePaths.from_options(tmp_path / "state", Path("/tmp/atoll-x"))
    older = base_image.recipe_key(packages=("python3", "g++"))
    assert "nftables" in base_image.PACKAGES and "python3-numpy" in base_image.PACKAGES
    assert older != base_image.RECIPE
    assert base_image.recipe_key(packages=tuple(reversed(base_image.PACKAGES))) == (
        base_image.RECIPE
    )
    assert base_image.tarball(paths) == paths.base_tarball(base_image.RECIPE)
    assert base_image.tarball(paths) != paths.base_tarball(older)
    assert base_image.tarball(paths).name.startswith(f"{base_image.SUITE}-")
