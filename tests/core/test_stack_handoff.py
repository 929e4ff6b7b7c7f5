"""An agent's registration hands its options to the stack it declares; the stack names no agent."""

from __future__ import annotations

from typing import Any

import pytest
from harbor.models.trial.config import AgentConfig

from atoll.core import run_defaults
from atoll.core.records import Kind, Registration, StackUse
from atoll.core.registry import Registry
from atoll.core.stack_use import StackConfigError, handed_config


def settings_from_options(options: dict[str, Any], model_name: str | None) -> dict[str, Any]:
    if "size" in options and not str(options["size"]).isdigit():
        raise ValueError(f"size must be a whole number, not {options['size']!r}")
    return {"size": int(options.get("size", 1)), "model": model_name}


def broken(options: dict[str, Any], model_name: str | None) -> dict[str, Any]:
    return options["missing"]


def record(name: str, config: str = "test_stack_handoff:settings_from_options", **kw: Any):
    return Registration(
        name, Kind.AGENT, f"pkg.{name}:Agent", "a", stack=StackUse("a-stack", config), **kw
    )


REGISTRY = Registry(
    [
        Registration("plain", Kind.AGENT, "pkg.plain:Agent", "no stack"),
        Registration(
            "elsewhere",
            Kind.AGENT,
            "pkg.elsewhere:Agent",
            "b",
            stack=StackUse("another-stack", "test_stack_handoff:settings_from_options"),
        ),  # fmt: skip
        record("first"),
        record("second"),
        record("refusing"),
        record("buggy", "test_stack_handoff:broken"),
        record("missing", "no_such_module_here:settings"),
        Registration("a-stack", Kind.JOB_PLUGIN, "pkg.stack:Plugin", "the stack"),
    ]
)


def test_the_first_agent_that_declares_the_stack_hands_its_options_over() -> None:
    agents = [
        AgentConfig(name="pkg.plain:Agent"),
        AgentConfig(name="pkg.elsewhere:Agent", kwargs={"size": "9"}),
        AgentConfig(import_path="pkg.second:Agent", kwargs={"size": "3"}, model_name="m"),
        AgentConfig(name="first", kwargs={"size": "5"}),  # by short name, as a job config may
    ]
    handed = handed_config("a-stack", agents, REGISTRY)
    assert handed is not None
    assert handed.agent.name == "second"
    assert handed.config == {"size": 3, "model": "m"}


def test_without_an_agent_that_declares_the_stack_nothing_is_handed() -> None:
    agents = [AgentConfig(name="pkg.plain:Agent"), AgentConfig(name="oracle")]
    assert handed_config("a-stack", agents, REGISTRY) is None


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        (
            AgentConfig(name="pkg.refusing:Agent", kwargs={"size": "big"}),
            "agent 'refusing': size must be a whole number, not 'big'",
        ),
        (
            AgentConfig(name="pkg.buggy:Agent"),
            "agent 'buggy': test_stack_handoff:broken failed: KeyError: 'missing'",
        ),
        (AgentConfig(name="pkg.missing:Agent"), "agent 'missing': cannot import no_such_module"),
    ],
    ids=["refused", "failed", "unimportable"],
)
def test_a_config_that_cannot_be_made_is_one_line_naming_the_agent(
    agent: AgentConfig, message: str
) -> None:
    with pytest.raises(StackConfigError) as caught:
        handed_config("a-stack", [agent], REGISTRY)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_the_stack_of_an_agent_is_one_of_its_job_plugins() -> None:
    judged = record("judged", job_plugins=("a-judge",))
    assert judged.needed_job_plugins == ("a-judge", "a-stack")
    assert record("again", job_plugins=("a-stack",)).needed_job_plugins == ("a-stack",)
    registry = Registry([judged])
    assert run_defaults.default_plugins(["judged"], registry) == (
        ["a-judge", "a-stack"],
        ["judged"],
    )
    assert run_defaults.default_plugins(["pkg.judged:Agent"], registry)[0] == ["a-judge", "a-stack"]
