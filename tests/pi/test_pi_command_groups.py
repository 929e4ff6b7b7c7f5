"""`atoll pi` mounts the sub-groups other distributions register in `atoll_pi_commands`.

atoll-pi-train adds `train` and `bootstrap` that way (atoll-pi-docker names
neither); a third party's distribution, installed as pip would lay it out,
adds its own the same way, and a broken one is one error line naming it.
"""

from __future__ import annotations

import os
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
from support.distributions import install_plugin_distribution

HELLO = "import typer\napp = typer.Typer()\n\n@app.command()\ndef hello() -> None:\n    print('hello from a pi group')\n"


def atoll(venv_bin: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(site), "COLUMNS": "120", "TERM": "dumb"},
    )


def test_pi_train_registers_its_groups_by_entry_point():
    points = {ep.name: ep for ep in metadata.entry_points(group="atoll_pi_commands")}
    assert points["train"].value == "atoll.pi_train.cli:train_app"
    assert points["bootstrap"].value == "atoll.pi_train.bootstrap.cli:bootstrap_app"
    assert {points[n].dist.metadata["Name"] for n in ("train", "bootstrap")} == {"atoll-pi-train"}


@pytest.mark.slow
def test_a_distribution_left_out_of_the_plugins_adds_no_group(venv_bin, tmp_path):
    site = tmp_path / "empty-site"
    site.mkdir()

    def pi_commands(**selection: str) -> set[str]:
        listed = subprocess.run(
            [str(venv_bin / "atoll"), "pi", "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **selection, "PYTHONPATH": str(site), "COLUMNS": "120"},
        )
        assert listed.returncode == 0, listed.stderr
        return {line.split()[1] for line in listed.stdout.splitlines() if line.startswith("│ ")}

    # By distribution name and by the plugin's entry-point name, as the registry takes them.
    assert not pi_commands(ATOLL_DISABLE_PLUGINS="atoll-pi-train") & {"train", "bootstrap"}
    assert not pi_commands(ATOLL_DISABLE_PLUGINS="pi_train") & {"train", "bootstrap"}
    assert {"install", "train", "bootstrap"} <= pi_commands(ATOLL_PLUGINS="pi,pi_train")
    assert {"install", "train", "bootstrap"} <= pi_commands()


@pytest.mark.slow
def test_a_third_party_group_is_mounted_under_atoll_pi(venv_bin, tmp_path):
    site = install_plugin_distribution(
        tmp_path / "site",
        "atoll-pi-extra",
        {"pi_extra": HELLO},
        {"atoll_pi_commands": {"extra": "pi_extra:app"}},
    )
    listed = atoll(venv_bin, site, "pi", "--help")
    assert listed.returncode == 0, listed.stderr
    assert all(name in listed.stdout for name in ("extra", "train", "bootstrap", "install"))
    done = atoll(venv_bin, site, "pi", "extra", "hello")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hello from a pi group" in done.stdout


@pytest.mark.slow
def test_a_broken_group_is_one_line_naming_its_distribution(venv_bin, tmp_path):
    site = install_plugin_distribution(
        tmp_path / "site", "atoll-pi-extra", {}, {"atoll_pi_commands": {"extra": "pi_gone:app"}}
    )
    done = atoll(venv_bin, site, "pi", "--help")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "atoll-pi-extra" in lines[0] and "pi_gone" in lines[0], done.stderr
