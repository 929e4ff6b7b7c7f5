"""A job's agents have their options checked before any job plugin starts a service."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from harbor.models.trial.config import AgentConfig

from atoll.core.agent_settings import AgentRefused, StackConfigError, check_job_agents
from atoll.core.records import Kind, Registration, StackUse
from atoll.core.registry import Registry

CHECKED: list[tuple[str, dict[str, Any], str | None]] = []


def whole_sizes(options: dict[str, Any], model_name: str | None) -> None:
    CHECKED.append(("settings", options, model_name))
    if not str(options.get("size", "1")).isdigit():
        raise ValueError(f"setting 'size': a whole number, not {options['size']!r}")


def stack_reading(options: dict[str, Any], model_name: str | None) -> dict[str, Any]:
    CHECKED.append(("stack", options, model_name))
    if options.get("groups") == "0":
        raise ValueError("setting 'groups': at least 1")
    return {}


def crashing(options: dict[str, Any], model_name: str | None) -> None:
    raise KeyError("oops")


REGISTRY = Registry(
    [
        Registration("plain", Kind.AGENT, "pkg.plain:Agent", "no check"),
        Registration(
            "sized",
            Kind.AGENT,
            "pkg.sized:Agent",
            "a",
            settings="test_job_agent_options:whole_sizes",
        ),
        Registration(
            "stacked",
            Kind.AGENT,
            "pkg.stacked:Agent",
            "b",
            stack=StackUse("a-stack", "test_job_agent_options:stack_reading"),
        ),
        Registration(
            "buggy", Kind.AGENT, "pkg.buggy:Agent", "c", settings="test_job_agent_options:crashing"
        ),
    ]
)


@pytest.fixture(autouse=True)
def _forget() -> None:
    CHECKED.clear()


def test_each_agent_is_checked_by_its_own_function_or_its_stacks() -> None:
    check_job_agents(
        [
            AgentConfig(name="oracle"),  # not atoll's: left to Harbor
            AgentConfig(name="plain", kwargs={"anything": "goes"}),
            AgentConfig(name="sized", kwargs={"size": "3"}, model_name="m"),
            AgentConfig(import_path="pkg.stacked:Agent", kwargs={"groups": "2"}),
        ],
        REGISTRY,
    )
    assert CHECKED == [("settings", {"size": "3"}, "m"), ("stack", {"groups": "2"}, None)]


@pytest.mark.parametrize(
    ("agent", "line"),
    [
        (
            AgentConfig(name="sized", kwargs={"size": "big"}),
            "agent 'sized': setting 'size': a whole number, not 'big'",
        ),
        (
            AgentConfig(name="stacked", kwargs={"groups": "0"}),
            "agent 'stacked': setting 'groups': at least 1",
        ),
    ],
)
def test_a_refusal_is_the_agents_own_line_naming_it(agent: AgentConfig, line: str) -> None:
    with pytest.raises(AgentRefused) as refused:
        check_job_agents([AgentConfig(name="plain"), agent], REGISTRY)
    assert str(refused.value) == line


def test_a_check_that_crashes_names_the_agent_and_its_function() -> None:
    with pytest.raises(StackConfigError) as failed:
        check_job_agents([AgentConfig(name="buggy")], REGISTRY)
    assert not isinstance(failed.value, AgentRefused)
    assert str(failed.value) == (
        "agent 'buggy': test_job_agent_options:crashing failed: KeyError: 'oops'"
    )


@pytest.mark.slow
def test_atoll_run_refuses_a_bad_option_before_the_judge_or_the_stack_starts(
    venv_bin: Path, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    done = subprocess.run(
        [
            str(venv_bin / "atoll"),
            "run",
            "-y",
            "--agent",
            "guidance-ttt",
            "--task",
            "polyomino_packing",
            "--env",
            "atoll-local",
            "-o",
            str(jobs),
            "--ak",
            "groups=0",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output
    errors = [line for line in output.splitlines() if ": error:" in line]
    assert errors == [
        "frontiercs-judge: error: agent 'guidance-ttt' (atoll-guidance-ttt): setting 'groups': "
        "Input should be greater than or equal to 1 (got 0)"
    ]
    # Neither plugin started anything: no judge state, no stack directory, nothing said.
    (job,) = jobs.iterdir()
    assert sorted(p.name for p in job.iterdir()) == ["job.log"]
    assert "judge on" not in output and "Reef at" not in output
