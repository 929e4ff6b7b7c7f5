"""A run's identity binds the installed code: every atoll package, Harbor's and Python's versions."""

from __future__ import annotations

import platform
from importlib.metadata import version
from pathlib import Path

import pytest

from atoll.frontiersmith import config


@pytest.fixture
def fresh_identity():
    config.code_identity.cache_clear()
    config.code_hash.cache_clear()
    yield
    config.code_identity.cache_clear()
    config.code_hash.cache_clear()


def test_every_atoll_package_harbor_and_python_are_in_the_identity(
    fresh_identity, repo: Path
) -> None:
    identity = config.code_identity()
    assert identity["harbor"] == version("harbor")
    assert identity["python"] == platform.python_version()
    # every distribution of the workspace, not only the pipeline and its grader
    workspace = {f"atoll.{p.parent.name}" for p in repo.glob("*/*/src/atoll/*/__init__.py")}
    assert len(workspace) >= 7 and workspace <= set(identity["packages"])


def test_a_change_in_another_atoll_package_changes_the_code_hash(
    fresh_identity, tmp_path: Path, monkeypatch
) -> None:
    probe = tmp_path / "atoll" / "zz_identity_probe"
    probe.mkdir(parents=True)
    (probe / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = config.code_hash()
    assert "atoll.zz_identity_probe" in config.code_identity()["packages"]
    config.code_identity.cache_clear()
    config.code_hash.cache_clear()
    (probe / "__init__.py").write_text("VALUE = 2\n")
    assert config.code_hash() != before
