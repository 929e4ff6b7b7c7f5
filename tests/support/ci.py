"""Tests that need something a machine may lack: skip on a developer's machine, fail in CI.

CI (`CI=true`) installs and starts everything the tests need, so there a
missing prerequisite is a failure, never a quietly skipped test.
"""

from __future__ import annotations

import os
import shutil

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


# What no CI machine can have: it reaches the package registries only, so no source
# checkout of another project and no toolchain that installs by download. Each is named
# here once, and a test that needs one says which.
BEYOND_CI = {
    "frontiercs-checkout": "a FrontierCS source checkout named by ATOLL_FRONTIERCS",
    "julia": "a Julia toolchain in the sandbox (Debian ships none; its installers download)",
}


def beyond_ci(ok: bool, what: str, why: str) -> None:
    """Skip everywhere, CI included, when `ok` is false and `what` is one of BEYOND_CI."""
    assert what in BEYOND_CI, f"{what!r} is not beyond CI: use need()"
    if not ok:
        pytest.skip(f"{why} ({BEYOND_CI[what]} is beyond CI)")


def not_applicable(why: str) -> None:
    """Skip a parametrised case that is about a feature its subject does not claim.

    Not a missing prerequisite: the case asks nothing of the machine.
    """
    pytest.skip(f"not applicable: {why}")


def gxx_fixture() -> None:
    need(shutil.which("g++") is not None, "needs g++", ".ci/run installs it")
