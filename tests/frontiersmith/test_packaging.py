"""The example ships inside the wheel, every file with its bundle mode; a bundle on the public
default image still runs here, where the offline engine lacks that image (atoll-local).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from support.engine import docker_engine
from support.trials import atoll_run, verifier_json

from atoll.checker import layout
from atoll.frontiersmith.bundle import DEFAULT_BASE_IMAGE, read_bundle, write_bundle

PREFIX = "atoll/frontiersmith/tasks/frontiersmith-example/"


@pytest.mark.slow
def test_the_wheel_carries_the_example_with_its_modes(repo: Path, tmp_path: Path):
    uv = shutil.which("uv")
    assert uv is not None, "uv is not on PATH; the workspace is installed with it"
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(tmp_path), str(repo / "emitters/frontiersmith")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("atoll_frontiersmith-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        entries = {
            info.filename[len(PREFIX) :]: (info.external_attr >> 16) & 0o7777
            for info in archive.infolist()
            if info.filename.startswith(PREFIX)
        }
        assert entries == layout.FILES | {
            k: m
            for k, m in layout.OPTIONAL.items()
            if (repo / "tasks/frontiersmith-example" / k).exists()
        }
        unpacked = tmp_path / "unpacked"
        for name, mode in entries.items():
            target = unpacked / name
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            target.write_bytes(archive.read(PREFIX + name))
            target.chmod(mode)
    for directory in layout.DIRS:
        (unpacked / directory).chmod(0o755)
    assert (
        read_bundle(unpacked).bundle_hash
        == read_bundle(repo / "tasks/frontiersmith-example").bundle_hash
    )


@pytest.mark.slow
@pytest.mark.docker
def test_a_bundle_on_the_public_image_runs_on_atoll_local_here(example_dir, tmp_path, monkeypatch):
    # An engine answers, but it has no registry to pull python:3.12-slim from.
    monkeypatch.setenv("DOCKER_HOST", docker_engine())
    example = read_bundle(example_dir).spec
    public = dataclasses.replace(example, base_image=DEFAULT_BASE_IMAGE)
    task = Path(write_bundle(tmp_path / "public" / "frontiersmith-example", public).path)
    assert "\nFROM python:3.12-slim\n" in (task / "environment" / "Dockerfile").read_text()

    from atoll.core.run_defaults import choose_environment

    choice = choose_environment(task)
    assert choice.name == "atoll-local" and "python:3.12-slim" in choice.reason
    trial = atoll_run(tmp_path / "jobs", agent="oracle", env="atoll-local", path=task)
    assert verifier_json(trial, "reward.json") == {"reward": example.reference_reward}
