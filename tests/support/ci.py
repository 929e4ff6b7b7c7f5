"""Tests that need something a machine may lack: skip on a developer's machine, fail in CI.

CI (`CI=true`) installs and starts everything the tests need, so there a
missing prerequisite is a failure, never a quietly skipped test.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(ok: bool, why: str, ci_hint: str = "") -> None:
    """Skip here, fail in CI, when `ok` is false."""
    if ok:
        return
    if in_ci():
        pytest.fail(f"{why} ({ci_hint})" if ci_hint else why)
    pytest.skip(why)
