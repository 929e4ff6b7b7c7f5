"""atoll's cache, state and data directories: one function each, and every user of each under it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from atoll.core import harbor_commands
from atoll.core.docker_engine import paths as engine_paths
from atoll.core.sandbox import launcher
from atoll.core.user_dirs import CACHE_ENV, DATA_ENV, STATE_ENV, cache_dir, data_dir, state_dir
from atoll.frontiersmith import runs as frontiersmith_runs
from atoll.judge import embedded as judge
from atoll.stack import owner_index


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in (
        CACHE_ENV,
        STATE_ENV,
        DATA_ENV,
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
        "XDG_DATA_HOME",
        launcher.DIR_ENV,
        judge.STATE_ENV,
        engine_paths.STATE_DIR_ENV,
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def test_the_default_is_under_the_home_directory(home: Path) -> None:
    assert cache_dir() == home / ".cache" / "atoll"
    assert state_dir() == home / ".local" / "state" / "atoll"
    assert data_dir("docker") == home / ".local" / "share" / "atoll" / "docker"
    assert cache_dir("tasks", "frontiercs") == home / ".cache" / "atoll" / "tasks" / "frontiercs"


@pytest.mark.parametrize(
    ("find", "own", "xdg"),
    [
        (cache_dir, CACHE_ENV, "XDG_CACHE_HOME"),
        (state_dir, STATE_ENV, "XDG_STATE_HOME"),
        (data_dir, DATA_ENV, "XDG_DATA_HOME"),
    ],
    ids=["cache", "state", "data"],
)
def test_the_xdg_variable_moves_it_and_atolls_own_wins(
    find: Callable[..., Path],
    own: str,
    xdg: str,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(xdg, str(tmp_path / "xdg"))
    assert find("pi") == tmp_path / "xdg" / "atoll" / "pi"
    monkeypatch.setenv(own, str(tmp_path / "mine"))
    assert find("pi") == tmp_path / "mine" / "pi"  # no `atoll/` added: it is atoll's own


def test_blank_variables_count_as_unset(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (CACHE_ENV, STATE_ENV, DATA_ENV, "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, "")
    assert cache_dir() == home / ".cache" / "atoll"
    assert state_dir("judge") == home / ".local" / "state" / "atoll" / "judge"
    assert data_dir() == home / ".local" / "share" / "atoll"


def test_core_caches_are_kept_there_unless_their_own_variable_says_otherwise(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert launcher.build_dir() == tmp_path / "cache" / "sandbox"
    assert harbor_commands._cache_file().parent == tmp_path / "cache"
    monkeypatch.setenv(launcher.DIR_ENV, str(tmp_path / "launcher"))
    assert launcher.build_dir() == tmp_path / "launcher"


def test_the_private_engine_is_kept_in_the_data_directory_unless_told_otherwise(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    assert engine_paths.default_state_dir() == tmp_path / "data" / "docker"
    monkeypatch.setenv(engine_paths.STATE_DIR_ENV, str(tmp_path / "engine"))
    assert engine_paths.default_state_dir() == tmp_path / "engine"


def test_what_atoll_remembers_is_kept_in_its_state_directory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FrontierSmith's run index, the index of job-owned Reefs and the judge's results."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    atoll_state = tmp_path / "xdg-state" / "atoll"
    assert frontiersmith_runs.state_home() == atoll_state / "frontiersmith" / "runs"
    assert owner_index.index_dir() == atoll_state / "reef-stack" / "owned"
    assert judge.default_state_dir() == atoll_state / "judge"
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "state"))
    assert owner_index.index_dir() == tmp_path / "state" / "reef-stack" / "owned"
    monkeypatch.setenv(judge.STATE_ENV, str(tmp_path / "judge"))
    assert judge.default_state_dir() == tmp_path / "judge"
