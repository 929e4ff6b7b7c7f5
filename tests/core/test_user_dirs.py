"""atoll's cache directory: one function, and every cache of atoll's under it."""

from __future__ import annotations

from pathlib import Path

import pytest

from atoll.core import harbor_commands
from atoll.core.sandbox import launcher
from atoll.core.user_dirs import CACHE_ENV, cache_dir


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in (CACHE_ENV, "XDG_CACHE_HOME", launcher.DIR_ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def test_the_default_is_under_the_home_directory(home: Path) -> None:
    assert cache_dir() == home / ".cache" / "atoll"
    assert cache_dir("tasks", "frontiercs") == home / ".cache" / "atoll" / "tasks" / "frontiercs"


def test_xdg_cache_home_moves_it_and_atoll_cache_dir_wins(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir("pi") == tmp_path / "xdg" / "atoll" / "pi"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    assert cache_dir("pi") == tmp_path / "mine" / "pi"  # no `atoll/` added: it is atoll's own


def test_blank_variables_count_as_unset(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert cache_dir() == home / ".cache" / "atoll"


def test_core_caches_are_kept_there_unless_their_own_variable_says_otherwise(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert launcher.build_dir() == tmp_path / "cache" / "sandbox"
    assert harbor_commands._cache_file().parent == tmp_path / "cache"
    monkeypatch.setenv(launcher.DIR_ENV, str(tmp_path / "launcher"))
    assert launcher.build_dir() == tmp_path / "launcher"
