"""Fixtures of the FrontierSmith tests: the scripted model on loopback, seed files, the command."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.frontiersmith_model import KnapsackModel, seed_lines
from support.openai_server import ScriptedOpenAIServer


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
