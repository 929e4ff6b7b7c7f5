"""A third party installs single plugins with pip, without the rest of atoll.

Builds a fresh virtual environment, installs only atoll-core, the
FrontierCS judge plugin and the Reef stack from this checkout, and checks
that `atoll plugins list` there shows exactly those distributions (the stack
pulls in no agent), and that the stack runs there with no agent installed:
it renders Reef's configuration from its own settings.

The install runs through `uv pip install` (support/lone_venv.py).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from support.lone_venv import lone_venv as install_alone

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lone_venv(tmp_path_factory, repo):
    venv = tmp_path_factory.mktemp("single-plugin") / "venv"
    roots = ("plugins/atoll-core", "verifiers/frontiercs-judge", "stack/reef-stack")
    install_alone(venv, [repo / root for root in roots])
    return venv


INSTALLED = ["atoll-core", "atoll-frontiercs-judge", "atoll-reef-stack"]


def test_only_the_installed_plugins_are_listed(lone_venv):
    done = subprocess.run(
        [str(lone_venv / "bin" / "atoll"), "plugins", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    atoll_rows = [row for row in rows if row["source"] == "atoll"]
    assert sorted({row["distribution"] for row in atoll_rows}) == INSTALLED


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
    assert done.stdout.split() == INSTALLED


def test_the_stack_renders_from_its_own_settings_without_an_agent(lone_venv, tmp_path):
    run_toml = tmp_path / "run.toml"
    run_toml.write_text(f'groups = 3\nrollouts = 4\nstate_dir = "{tmp_path / "state"}"\n')
    done = subprocess.run(
        [str(lone_venv / "bin" / "atoll"), "stack", "render", "--config", str(run_toml), "steps=5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "groups-per-step: 3" in done.stdout and "rollouts-per-group: 4" in done.stdout
    assert "num-rollout: '5'" in done.stdout
    run_toml.write_text('executor_preset = "local"\n')  # an agent's setting; no agent reads it here
    refused = subprocess.run(
        [str(lone_venv / "bin" / "atoll"), "stack", "render", "--config", str(run_toml)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: unknown setting 'executor_preset'; known settings: ")
    assert len(refused.stderr.strip().splitlines()) == 1
