"""Sandbox backends by name from the entry-point group `atoll_sandbox_backends`.

atoll-core's own backends are registered there; a third party's distribution
(installed here as pip would lay it out) adds one the same way and is then
chosen by name, by `atoll sandbox check` as by `get_backend`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.distributions import install_plugin_distribution

from atoll.core.sandbox import backend_names, get_backend

pytestmark = pytest.mark.timeout(180)

# An honest backend of a third party: bubblewrap, with every run counted in a file.
THIRDBOX = """
from pathlib import Path
import os

from atoll.core.sandbox import SandboxBackend, get_backend


class ThirdBox(SandboxBackend):
    name = "thirdbox"
    supports_pipes = True

    def __init__(self):
        self.inner = get_backend("bwrap")
        self.log = Path(os.environ["THIRDBOX_LOG"])

    def check(self):
        self.inner.check()

    def run(self, argv, spec, stdin=None, *, pipes=None, cancel=None):
        with self.log.open("a") as out:
            out.write(" ".join(argv[:1]) + "\\n")
        return self.inner.run(argv, spec, stdin, pipes=pipes, cancel=cancel)

    def leftovers(self):
        return self.inner.leftovers()
"""


def third_party(tmp_path: Path, points: dict[str, str]) -> Path:
    return install_plugin_distribution(
        tmp_path / "site",
        "atoll-thirdbox",
        {"thirdbox": THIRDBOX},
        {"atoll_sandbox_backends": points},
    )


def atoll(venv_bin: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), *args],
        capture_output=True,
        text=True,
        timeout=150,
        env={
            **os.environ,
            "PYTHONPATH": str(site),
            "THIRDBOX_LOG": str(site / "runs.log"),
            "COLUMNS": "200",
            "TERM": "dumb",
        },
    )


def test_the_built_in_backends_are_entry_points_of_atoll_core():
    from importlib import metadata

    points = {ep.name: ep for ep in metadata.entry_points(group="atoll_sandbox_backends")}
    assert {name: points[name].dist.metadata["Name"] for name in ("bwrap", "docker")} == {
        "bwrap": "atoll-core",
        "docker": "atoll-core",
    }
    assert {"bwrap", "docker"} <= set(backend_names())
    assert get_backend("bwrap").name == "bwrap"


@pytest.mark.slow
def test_a_third_party_backend_is_chosen_by_name_and_passes_the_check(venv_bin, tmp_path, test_uid):
    site = third_party(tmp_path, {"thirdbox": "thirdbox:ThirdBox"})
    done = atoll(venv_bin, site, "sandbox", "check", "-b", "thirdbox", "--uid", str(test_uid + 5))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "thirdbox: conforms" in done.stdout
    assert (site / "runs.log").read_text().count("\n") >= 10  # its own runs, not bwrap's directly


@pytest.mark.slow
def test_a_third_party_backend_serves_the_json_report_under_its_name(venv_bin, tmp_path, test_uid):
    site = third_party(tmp_path, {"thirdbox": "thirdbox:ThirdBox"})
    uid = str(test_uid + 5)
    done = atoll(
        venv_bin,
        site,
        "sandbox",
        "check",
        "-b",
        "thirdbox",
        "--uid",
        uid,
        "--only",
        "plain_run",
        "--json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["backend"] == "thirdbox" and report["ok"] is True


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.slow
def test_an_unknown_name_lists_the_third_party_backend_among_the_known(venv_bin, tmp_path):
    site = third_party(tmp_path, {"thirdbox": "thirdbox:ThirdBox"})
    line = one_error_line(atoll(venv_bin, site, "sandbox", "check", "-b", "podman"))
    assert "unknown sandbox backend 'podman'; known backends: bwrap, docker, thirdbox" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("no_such_module:Box", "ModuleNotFoundError: No module named 'no_such_module'"),
        ("thirdbox:NotThere", "AttributeError"),
        ("thirdbox:Path", "is not a SandboxBackend"),
    ],
)
def test_a_broken_entry_point_is_one_line_naming_its_distribution(venv_bin, tmp_path, target, says):
    site = third_party(tmp_path, {"broken": target})
    line = one_error_line(
        atoll(venv_bin, site, "sandbox", "check", "-b", "broken", "--only", "plain_run")
    )
    assert "atoll-thirdbox" in line and "'broken'" in line and says in line


@pytest.mark.slow
def test_a_name_two_distributions_claim_is_refused_naming_both(venv_bin, tmp_path):
    site = third_party(tmp_path, {"bwrap": "thirdbox:ThirdBox"})
    line = one_error_line(
        atoll(venv_bin, site, "sandbox", "check", "-b", "bwrap", "--only", "plain_run")
    )
    assert "atoll-core" in line and "atoll-thirdbox" in line and "'bwrap'" in line
