"""Fixtures for the sandbox conformance suite: a backend per parametrisation,
an unprivileged uid owned by this test session, and a leftover audit.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from atoll.core.sandbox import Limits, SandboxBackend, SandboxError, SandboxSpec, get_backend
from atoll.core.sandbox.cgroups import created_groups

# A uid/gid no host account uses, distinct per test process, so the leftover
# audit below cannot mistake someone else's `nobody` processes for ours.
TEST_UID = 61000 + os.getpid() % 3000


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def test_uid() -> int:
    return TEST_UID


def _docker_available() -> tuple[bool, str]:
    if importlib.util.find_spec("atoll.core.sandbox.docker_backend") is None:
        return False, "the docker sandbox backend is not installed"
    try:
        get_backend("docker").check()
    except SandboxError as exc:
        return False, str(exc)
    return True, ""


@pytest.fixture(
    scope="session",
    params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)],
)
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    if request.param == "docker":
        ok, why = _docker_available()
        if not ok:
            if in_ci():
                pytest.fail(f"docker sandbox backend unusable in CI: {why}")
            pytest.skip(f"docker sandbox backend unusable here: {why}")
    chosen = get_backend(request.param)
    chosen.check()
    return chosen


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) == uid:
                found.append(int(entry.name))
    return found


def _mount_points() -> set[str]:
    return {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}


@pytest.fixture
def box(backend: SandboxBackend, tmp_path: Path) -> Iterator[tuple[SandboxBackend, SandboxSpec]]:
    """The backend and a strict default spec; after the test, nothing may be left behind."""
    mounts_before = _mount_points()
    spec = SandboxSpec(
        uid=TEST_UID,
        gid=TEST_UID,
        limits=Limits(cpu_seconds=5, wall_seconds=10, memory_bytes=256 * 2**20),
    )
    yield backend, spec
    assert _processes_of(TEST_UID) == [], "sandboxed processes outlived their run"
    assert created_groups() == [], "per-run cgroups were left behind"
    leftovers = getattr(backend, "leftovers", None)  # containers, for engine backends
    if leftovers is not None:
        assert leftovers() == [], "sandbox containers were left behind"
    new_mounts = _mount_points() - mounts_before
    assert not [m for m in new_mounts if str(tmp_path) in m or m.startswith(("/app", "/logs"))]
