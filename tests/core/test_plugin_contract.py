"""What a third-party plugin author relies on, checked with real installed distributions.

Each test installs a small plugin distribution on a PYTHONPATH directory and
runs the real `atoll` command, as a user who pip-installed it would.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.distributions import install_plugin_distribution

from atoll.core.records import Kind
from atoll.core.registry import HARBOR_PLUGIN_GROUP, harbor_plugins, load

APP = "import typer\napp = typer.Typer()\n\n@app.command()\ndef hello() -> None:\n    print('hi')\n"


def atoll(venv_bin: Path, *args: str, site: Path | None = None, **env: str):
    environment = {
        "PATH": f"{venv_bin}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "COLUMNS": "80",
        "TERM": "dumb",
        **env,
    }
    if site is not None:
        environment["PYTHONPATH"] = str(site)
    return subprocess.run(
        [str(venv_bin / "atoll"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def plugin(tmp_path: Path, hooks: str, name: str = "atoll-thirdparty") -> Path:
    return install_plugin_distribution(
        tmp_path / "site",
        name,
        {
            "thirdparty_hooks": "from atoll.core import Kind, Registration, hookimpl\n\n" + hooks,
            "thirdparty_cli": APP,
        },
        {"atoll": {"thirdparty": "thirdparty_hooks"}},
    )


def test_a_misspelled_hook_is_refused_naming_the_plugin_and_the_hook(venv_bin, tmp_path):
    site = plugin(
        tmp_path,
        "@hookimpl\ndef atoll_agnets():\n"
        "    return [Registration('a', Kind.AGENT, 'm:A', 'an agent')]\n",
    )
    line = one_error_line(atoll(venv_bin, "plugins", "list", site=site))
    assert "atoll-thirdparty" in line and "atoll_agnets" in line
    assert "atoll_agents" in line  # the known hooks are listed


def test_an_unmarked_misspelled_hook_is_refused_too(venv_bin, tmp_path):
    site = plugin(tmp_path, "def atoll_comands():\n    return []\n")
    line = one_error_line(atoll(venv_bin, "doctor", site=site))
    assert "atoll-thirdparty" in line and "atoll_comands" in line


@pytest.mark.slow
def test_a_hook_module_that_fails_to_import_is_one_line(venv_bin, tmp_path):
    site = plugin(tmp_path, "import no_such_module_here\n")
    line = one_error_line(atoll(venv_bin, "plugins", "list", site=site))
    assert "atoll-thirdparty" in line and "no_such_module_here" in line
    assert "ATOLL_DISABLE_PLUGINS" in line
    # ... and the way out it names works
    done = atoll(venv_bin, "plugins", "list", site=site, ATOLL_DISABLE_PLUGINS="atoll-thirdparty")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_command_with_a_harbor_command_name_is_refused(venv_bin, tmp_path):
    site = plugin(
        tmp_path,
        "@hookimpl\ndef atoll_commands():\n"
        "    return [Registration('view', Kind.COMMAND, 'thirdparty_cli:app', 'mine')]\n",
    )
    for args in (["view", "--help"], ["plugins", "list"]):
        line = one_error_line(atoll(venv_bin, *args, site=site))
        assert "atoll-thirdparty" in line and "'view'" in line and "Harbor" in line


def test_a_command_two_plugins_claim_is_refused(venv_bin, tmp_path):
    site = plugin(
        tmp_path,
        "@hookimpl\ndef atoll_commands():\n"
        "    return [Registration('judge', Kind.COMMAND, 'thirdparty_cli:app', 'mine')]\n",
    )
    line = one_error_line(atoll(venv_bin, "judge", "--help", site=site))
    assert "atoll-thirdparty" in line and "atoll-frontiercs-judge" in line


@pytest.mark.slow
def test_a_plugin_command_runs_and_the_listing_says_where_it_comes_from(venv_bin, tmp_path):
    site = plugin(
        tmp_path,
        "@hookimpl\ndef atoll_commands():\n"
        "    return [Registration('greet', Kind.COMMAND, 'thirdparty_cli:app', 'Say hi.')]\n",
    )
    done = atoll(venv_bin, "greet", site=site)
    assert done.returncode == 0 and done.stdout.strip() == "hi", done.stderr
    rows = json.loads(atoll(venv_bin, "plugins", "list", "--json", site=site).stdout)
    origin = {(r["name"], r["kind"]): r["distribution"] for r in rows}
    assert origin[("greet", "command")] == "atoll-thirdparty"
    assert origin[("run", "command")] == "harbor"
    assert origin[("judge", "command")] == "atoll-frontiercs-judge"


@pytest.mark.slow
def test_users_choose_which_plugins_load(venv_bin, tmp_path):
    site = plugin(
        tmp_path,
        "@hookimpl\ndef atoll_agents():\n"
        "    return [Registration('mine', Kind.AGENT, 'm:A', 'an agent')]\n",
    )

    def agents(**env: str) -> set[str]:
        done = atoll(venv_bin, "plugins", "list", "--json", "--kind", "agent", site=site, **env)
        assert done.returncode == 0, done.stderr
        return {r["name"] for r in json.loads(done.stdout)}

    ours = {r.name for r in load().of_kind(Kind.AGENT)}
    assert "guidance-ttt" in ours
    assert agents() == ours | {"mine"}
    assert agents(ATOLL_DISABLE_PLUGINS="atoll-thirdparty") == ours
    assert agents(ATOLL_DISABLE_PLUGINS="thirdparty, guidance_ttt") == ours - {"guidance-ttt"}
    assert agents(ATOLL_PLUGINS="atoll-thirdparty") == {"mine"}
    assert agents(ATOLL_PLUGINS="atoll-thirdparty,guidance_ttt") == {"mine", "guidance-ttt"}
    # the host always loads: its commands stay
    only = atoll(venv_bin, "plugins", "list", "--json", site=site, ATOLL_PLUGINS="")
    names = {r["name"] for r in json.loads(only.stdout) if r["distribution"] != "harbor"}
    assert names >= {"plugins", "doctor", "docker", "atoll-local"}
    assert "judge" not in names and "mine" not in names


def test_a_misspelled_plugin_selection_is_one_line(venv_bin):
    line = one_error_line(atoll(venv_bin, "plugins", "list", ATOLL_PLUGINS="atoll-judge"))
    assert "ATOLL_PLUGINS" in line and "atoll-judge" in line and "atoll-frontiercs-judge" in line


def test_job_plugins_are_declared_alike_to_harbor_and_to_atoll():
    """Every installed distribution's `harbor.plugins` entry points and atoll job-plugin records agree."""
    harbor = {(p.distribution, p.name, p.target) for p in harbor_plugins()}
    ours = {(r.distribution, r.name, r.target) for r in load().of_kind(Kind.JOB_PLUGIN)}
    atoll_distributions = {r.distribution for r in load().all()}
    harbor_from_atoll = {entry for entry in harbor if entry[0] in atoll_distributions}
    assert ours == harbor_from_atoll, (
        f"registered with atoll only: {sorted(ours - harbor_from_atoll)}; "
        f"in {HARBOR_PLUGIN_GROUP} only: {sorted(harbor_from_atoll - ours)}"
    )
    assert ours, "no job plugin found: the check would pass vacuously"


def test_every_agents_stack_is_an_installed_job_plugin_with_an_importable_config():
    from atoll.core.targets import import_target

    registry = load()
    stacked = [r for r in registry.of_kind(Kind.AGENT) if r.stack is not None]
    assert stacked, "no agent declares a stack: the check would pass vacuously"
    for record in stacked:
        assert registry.find(Kind.JOB_PLUGIN, record.stack.plugin), (record.name, record.stack)
        assert callable(import_target(record.stack.config)), (record.name, record.stack)


def test_every_doctor_check_is_needed_by_someone(venv_bin):
    from atoll.core.doctor import checks, needed_by

    users = needed_by()
    for requirement in checks():
        assert users[requirement], f"no installed plugin declares that it needs {requirement}"


@pytest.mark.slow
def test_a_plugin_adds_a_doctor_check_and_declares_what_it_needs(venv_bin, tmp_path):
    site = install_plugin_distribution(
        tmp_path / "site",
        "atoll-thirdparty",
        {
            "thirdparty_hooks": (
                "from atoll.core import Kind, Registration, hookimpl\n\n"
                "@hookimpl\ndef atoll_doctor_checks():\n"
                "    return [Registration('frobnicator', Kind.CHECK, 'thirdparty_checks:check', 'x')]\n\n"
                "@hookimpl\ndef atoll_agents():\n"
                "    return [Registration('frob', Kind.AGENT, 'm:A', 'x', requires=('frobnicator', 'widget'))]\n"
            ),
            "thirdparty_checks": (
                "from atoll.core.doctor import Finding\n\n"
                "def check():\n    return Finding('frobnicator', False, 'not here', 'install it')\n"
            ),
        },
        {"atoll": {"thirdparty": "thirdparty_hooks"}},
    )
    done = atoll(
        venv_bin, "doctor", "--only", "frobnicator", "--only", "widget", "--json", site=site
    )
    assert done.returncode == 0, done.stderr
    rows = {row["requirement"]: row for row in json.loads(done.stdout)}
    assert rows["frobnicator"] == {
        "requirement": "frobnicator",
        "status": "missing",
        "found": "not here",
        "fix": "install it",
        "needed_by": ["frob (agent)"],
    }
    assert rows["widget"]["status"] == "unchecked" and rows["widget"]["needed_by"] == [
        "frob (agent)"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("columns", ["80", "100"])
def test_doctor_fits_the_terminal_one_line_per_requirement(venv_bin, columns):
    from atoll.core.doctor import checks

    done = atoll(venv_bin, "doctor", COLUMNS=columns, DOCKER_HOST="unix:///nonexistent/d.sock")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line.rstrip()) <= int(columns) for line in lines)
    # A title, a header, then one line per requirement: nothing spills onto a second line.
    assert [line.split()[0] for line in lines[2:]] == list(checks())
    (docker,) = [line for line in lines if line.split()[0] == "docker"]
    assert docker.split()[1] == "missing" and "fix: `atoll docker up`" in docker
    wide = atoll(venv_bin, "doctor", "--only", "docker", "--wide", COLUMNS=columns)
    assert "Needed by" in wide.stdout and "euler" in wide.stdout  # what needs it: --wide only
    assert "euler" not in docker


@pytest.mark.slow
@pytest.mark.parametrize("columns", ["80", "100"])
def test_plugins_list_fits_the_terminal_one_line_per_entry(venv_bin, columns):
    done = atoll(venv_bin, "plugins", "list", COLUMNS=columns)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line.rstrip()) <= int(columns) for line in lines)
    entries = [line.split()[0] for line in lines[2:] if line.startswith("  ")]
    headers = [line.split()[0] for line in lines[2:] if not line.startswith(" ")]
    records = load().all()
    assert {r.name for r in records} <= set(entries)
    assert {r.distribution for r in records} <= set(headers)
    assert len(entries) + len(headers) == len(lines) - 2  # nothing spills onto a second line


@pytest.mark.slow
def test_a_command_extending_harbors_keeps_harbors_sub_commands(venv_bin):
    """The judge's `task` adds `frontiercs` to Harbor's `task`; Harbor's own stay reachable."""
    done = atoll(venv_bin, "task", "--help", COLUMNS="120")
    assert done.returncode == 0, done.stderr
    for sub in ("init", "download", "start-env", "frontiercs"):
        assert f" {sub} " in done.stdout, sub
    init = atoll(venv_bin, "task", "init", "--help")
    assert init.returncode == 0 and "Initialize" in init.stdout, init.stderr
    listed = atoll(venv_bin, "plugins", "list", COLUMNS="120").stdout
    assert "task +harbor" in listed and "plugins +harbor" in listed


def test_plugins_list_wide_has_targets_and_requirements(venv_bin):
    done = atoll(venv_bin, "plugins", "list", "--wide", COLUMNS="250")
    assert done.returncode == 0, done.stderr
    for column in ("Version", "Target", "Requires"):
        assert column in done.stdout
    assert "atoll.core.plugins_cmd:app" in done.stdout


@pytest.mark.slow
def test_a_plugin_adds_a_scorer_that_a_task_can_name(venv_bin, tmp_path):
    """A third-party scorer is found by the name a task's contract gives, and opened like ours."""
    site = install_plugin_distribution(
        tmp_path / "site",
        "atoll-thirdparty",
        {
            "thirdparty_hooks": (
                "from atoll.core import Kind, Registration, hookimpl\n\n"
                "@hookimpl\ndef atoll_scorers():\n"
                "    return [Registration('length', Kind.SCORER, 'thirdparty_scorer:open_scorer',"
                " 'Scores a program by its length.')]\n"
            ),
            "thirdparty_scorer": (
                "from contextlib import contextmanager\n"
                "from atoll.core.scoring import CandidateScore, ScoreStatus\n\n"
                "class Length:\n"
                "    def check(self): pass\n"
                "    def close(self): pass\n"
                "    def score(self, program):\n"
                "        return CandidateScore(ScoreStatus.VALID, float(len(program)), 1.0, 'ok',"
                " {'scorer': 'length'})\n\n"
                "@contextmanager\n"
                "def open_scorer(setup):\n"
                "    yield Length()\n"
            ),
        },
        {"atoll": {"thirdparty": "thirdparty_hooks"}},
    )
    rows = json.loads(
        atoll(venv_bin, "plugins", "list", "--json", "--kind", "scorer", site=site).stdout
    )
    origin = {r["name"]: r["distribution"] for r in rows}
    assert origin == {
        "length": "atoll-thirdparty",
        "checker": "atoll-checker",
        "frontiercs-judge": "atoll-frontiercs-judge",
        "verifier": "atoll-checker",
    }
    probe = (
        "from atoll.core.scoring import ScorerSetup, open_scorer\n"
        "with open_scorer('length', ScorerSetup(language='python')) as s:\n"
        "    v = s.score('print(1)\\n')\n"
        "print(v.status.value, v.raw_score, v.receipt['scorer'])\n"
    )
    done = subprocess.run(
        [str(venv_bin / "python"), "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{venv_bin}:/usr/bin:/bin", "PYTHONPATH": str(site)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["valid", "9.0", "length"]


def test_a_scorer_no_plugin_registers_is_one_line_naming_it():
    from atoll.core.scoring import ScorerNotInstalled, ScorerSetup, open_scorer

    with pytest.raises(ScorerNotInstalled) as caught:
        open_scorer("frobnicate", ScorerSetup(language="python"))
    message = str(caught.value)
    assert "'frobnicate'" in message and "\n" not in message
    assert "checker, frontiercs-judge, verifier" in message
