"""A third party installs one plugin with pip, without the rest of atoll.

Builds a fresh virtual environment, installs only atoll-core and the
FrontierCS judge plugin from this checkout into it, and checks that `atoll
plugins list` there shows exactly those two distributions.

The install runs through `uv pip install`: the same PEP 517 builds and the
same dependency metadata pip reads, but served from uv's cache that `uv sync`
already filled, so the check costs seconds instead of two minutes of
resolving and downloading Harbor's dependencies again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lone_venv(tmp_path_factory, repo):
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH (the tests run through `uv run pytest`)"
    venv = tmp_path_factory.mktemp("single-plugin") / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    pip = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            str(repo / "plugins" / "atoll-core"),
            str(repo / "verifiers" / "frontiercs-judge"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv


def test_only_the_two_installed_plugins_are_listed(lone_venv):
    done = subprocess.run(
        [str(lone_venv / "bin" / "atoll"), "plugins", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    atoll_rows = [row for row in rows if row["source"] == "atoll"]
    assert {row["distribution"] for row in atoll_rows} == {"atoll-core", "atoll-frontiercs-judge"}


def test_no_other_member_is_installed(lone_venv):
    done = subprocess.run(
        [
            str(lone_venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; "
            "print('\\n'.join(sorted(ep.dist.metadata['Name'] for ep in m.entry_points(group='atoll'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["atoll-core", "atoll-frontiercs-judge"]
