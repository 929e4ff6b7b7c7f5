"""`atoll doctor` against the private engine: it names the egress sidecar's state too."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = pytest.mark.docker


def test_doctor_says_the_engine_has_the_egress_sidecar(venv_bin, docker_host):
    done = subprocess.run(
        [str(venv_bin / "atoll"), "doctor", "--only", "docker"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{venv_bin}:/usr/bin:/bin", "COLUMNS": "300", "DOCKER_HOST": docker_host},
        check=True,
    )
    assert f"at {docker_host}; egress sidecar present" in done.stdout
