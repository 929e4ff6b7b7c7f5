"""Fixtures of the Guidance-TTT core tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from guidance_builders import write_task

from atoll.guidance_ttt.contract import Task, load_task


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return load_task(write_task(tmp_path / "task"))


# training=tinker: a tiny guidance model that writes well-formed guidance, served by a
# local Tinker server of its own (one SkyRL tx server serves one base model), for the
# whole session; built only when a test asks for it, once for all the xdist workers of the run.


@pytest.fixture(scope="session")
def tinker_task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tinker_run import polyomino_task

    directory = tmp_path_factory.mktemp("polyomino") / "task"
    polyomino_task(directory)
    return directory


@pytest.fixture(scope="session")
def guidance_model(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path, tinker_task_dir: Path
) -> Iterator[Path]:
    """Built once for all the workers of the run (minutes of CPU): its prompts are the task's
    text, the same in every worker's copy of the task, and the servers only read it."""
    from support.shared_build import run_root, shared_build
    from tinker_run import guidance_base_model

    def build(files: Path) -> dict[str, Any]:
        guidance_base_model(tiny_model, load_task(tinker_task_dir), files / "model")
        return {}

    built = shared_build(run_root(tmp_path_factory), "guidance-model", build)
    yield built.files / "model"
    built.assert_unchanged()


@pytest.fixture(scope="session")
def guidance_server_env(
    tmp_path_factory: pytest.TempPathFactory, venv_bin: Path, guidance_model: Path
) -> Iterator[dict[str, str]]:
    """The environment naming a local Tinker server that serves `guidance_model`."""
    from support.tinker_local import local_server

    state = tmp_path_factory.mktemp("guidance-local")
    with local_server(venv_bin, dict(os.environ), state, guidance_model) as env:
        yield env
