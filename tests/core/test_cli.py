"""The installed `atoll` command, run as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from atoll.core.registry import load


def run(venv_bin, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(venv_bin / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(venv_bin) + ":/usr/bin:/bin", "COLUMNS": "200", "TERM": "dumb"},
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_plugins_list_shows_every_registration(venv_bin):
    rows = json.loads(run(venv_bin, "atoll", "plugins", "list", "--json", check=True).stdout)
    listed = {(r["name"], r["kind"], r["distribution"], r["target"]) for r in rows}
    for record in load().all():
        assert (record.name, record.kind.value, record.distribution, record.target) in listed


def test_plugins_list_table_has_the_columns(venv_bin):
    out = run(venv_bin, "atoll", "plugins", "list", check=True).stdout
    for column in ("Name", "Kind", "Summary"):
        assert column in out
    assert "atoll-frontiercs-judge" in out


def _normalise(help_text: str) -> str:
    return " ".join(re.sub(r"\b(atoll|harbor)\b", "PROG", help_text).split())


@pytest.mark.slow
def test_atoll_run_help_is_harbors_run_help(venv_bin):
    ours = run(venv_bin, "atoll", "run", "--help", check=True).stdout
    theirs = run(venv_bin, "harbor", "run", "--help", check=True).stdout
    assert "--agent" in ours and "--env" in ours
    assert _normalise(ours) == _normalise(theirs)


@pytest.mark.slow
def test_harbor_commands_are_all_there(venv_bin):
    out = run(venv_bin, "atoll", "--help", check=True).stdout
    for command in ("run", "job", "trial", "task", "dataset", "plugins", "doctor", "view"):
        assert re.search(rf"│ {command}\s", out), command


def test_unknown_agent_is_one_line_and_a_failure(venv_bin):
    done = run(venv_bin, "atoll", "run", "--agent", "no-such-agent", "-p", "x")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "no-such-agent" in lines[0] and "oracle" in lines[0]


def test_unknown_plugin_subcommand_option_is_a_usage_error(venv_bin):
    done = run(venv_bin, "atoll", "plugins", "list", "--kind", "nonsense")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("requirement", ["python", "harbor", "g++"])
def test_doctor_reports_requirements(venv_bin, requirement):
    out = run(venv_bin, "atoll", "doctor", "--only", requirement, check=True).stdout
    assert requirement in out and "ok" in out


def test_doctor_names_the_fix_for_a_missing_engine(venv_bin):
    done = subprocess.run(
        [str(venv_bin / "atoll"), "doctor", "--only", "docker"],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": str(venv_bin) + ":/usr/bin:/bin",
            "COLUMNS": "250",
            "DOCKER_HOST": "unix:///nonexistent/docker.sock",
        },
    )
    assert done.returncode == 0
    assert "missing" in done.stdout and "atoll docker up" in done.stdout


@pytest.mark.slow
def test_atoll_emit_lists_the_emitters_and_refuses_an_unknown_one(venv_bin):
    out = run(venv_bin, "atoll", "emit", "--help", check=True).stdout
    assert "frontiersmith" in out
    done = run(venv_bin, "atoll", "emit", "no-such-emitter")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "unknown emitter 'no-such-emitter'; known emitters: frontiersmith" in done.stderr
    flags = run(venv_bin, "atoll", "emit", "frontiersmith", "--help", check=True).stdout
    for flag in ("--seeds", "--target", "--budget", "--model", "--base-url", "--api-key-env",
                 "--price-in", "--price-out", "--workers", "--environment", "--max-candidates",
                 "--solutions", "--max-repairs", "--min-divergence", "--min-score-spread",
                 "--rollout-tasks", "--out", "--resume", "reconcile"):  # fmt: skip
        assert flag in flags, flag
