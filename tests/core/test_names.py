"""Short-name resolution on `atoll run`: what is rewritten and what passes through."""

from __future__ import annotations

import pytest

from atoll.core.names import UsageError, is_run_command, resolve
from atoll.core.records import Kind, Registration
from atoll.core.registry import Registry, TaskSourceError, UnknownName

REGISTRY = Registry(
    [
        Registration("tiny-agent", Kind.AGENT, "pkg.agent:TinyAgent", "a"),
        Registration("tiny-env", Kind.ENVIRONMENT, "pkg.env:TinyEnv", "e"),
        Registration("tiny-verifier", Kind.VERIFIER, "pkg.ver:TinyVerifier", "v"),
        Registration("tiny_task", Kind.TASK, "/somewhere/tiny_task", "t"),
    ]
)


@pytest.mark.parametrize(
    "argv",
    [
        ["run"],
        ["run", "-p", "x"],
        ["job", "start"],
        ["jobs", "start", "-a", "x"],
        ["trial", "start"],
    ],
)
def test_run_commands_are_recognised(argv):
    assert is_run_command(argv)


@pytest.mark.parametrize("argv", [["plugins", "list"], ["job", "resume"], ["view", "run"], []])
def test_other_commands_are_left_alone(argv):
    assert not is_run_command(argv)


def test_short_names_become_import_paths_and_task_paths():
    argv = [
        "run",
        "--agent",
        "tiny-agent",
        "-e",
        "tiny-env",
        "--verifier=tiny-verifier",
        "-t",
        "tiny_task",
    ]
    assert resolve(argv, REGISTRY) == [
        "run",
        "--agent",
        "pkg.agent:TinyAgent",
        "-e",
        "pkg.env:TinyEnv",
        "--verifier",
        "pkg.ver:TinyVerifier",
        "--path",
        "/somewhere/tiny_task",
    ]


def test_every_spelling_harbor_accepts_is_rewritten():
    argv = ["run", "-atiny-agent", "--env=tiny-env", "-ttiny_task", "-o", "jobs"]
    assert resolve(argv, REGISTRY) == [
        "run",
        "-a",
        "pkg.agent:TinyAgent",
        "--env",
        "pkg.env:TinyEnv",
        "--path",
        "/somewhere/tiny_task",
        "-o",
        "jobs",
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--agent", "oracle", "-p", "t"],
        ["run", "-a", "my.mod:Agent", "-p", "t"],
        ["run", "--agent", "acp:opencode@1.3.9", "-p", "t"],
        ["run", "--env", "docker", "-p", "t"],
        ["run", "--env", "my.mod:Env", "-p", "t"],
        ["run", "--task", "org/name@1", "-a", "oracle"],
        ["run", "--verifier", "my.mod:Verifier", "-p", "t"],
        ["run", "-p", "t", "--", "--agent", "anything"],
    ],
)
def test_harbor_forms_pass_through_untouched(argv):
    assert resolve(argv, REGISTRY) == argv


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--agent", "nope"], "unknown agent 'nope'; known agents: "),
        (["run", "--env", "nope"], "unknown environment 'nope'; known environments: "),
        (["run", "--verifier", "nope"], "unknown verifier 'nope'; known verifiers: tiny-verifier"),
        (["run", "-t", "nope"], "unknown task 'nope'; known tasks: tiny_task"),
    ],
)
def test_unknown_names_are_one_error_listing_the_known(argv, message):
    with pytest.raises(UnknownName) as caught:
        resolve(argv, REGISTRY)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_unknown_agent_lists_atoll_and_harbor_agents():
    with pytest.raises(UnknownName) as caught:
        resolve(["run", "--agent", "nope"], REGISTRY)
    assert "tiny-agent" in caught.value.known and "oracle" in caught.value.known


@pytest.mark.parametrize("path", [["-p", "elsewhere"], ["-pelsewhere"], ["--path=elsewhere"]])
def test_a_task_name_and_a_path_together_are_refused(path):
    with pytest.raises(UsageError):
        resolve(["run", "-t", "tiny_task", *path], REGISTRY)


# A dynamic task source: `fam/<x>` names tasks it writes; `fam/decline` is left to Harbor.
def resolve_family(name: str):
    from pathlib import Path

    leaf = name.split("/", 1)[1]
    if leaf == "decline":
        return None
    if leaf == "broken":
        raise TaskSourceError("fam/broken cannot be written")
    return Path("/written") / leaf


DYNAMIC = Registry(
    [
        Registration("tiny_task", Kind.TASK, "/somewhere/tiny_task", "t"),
        Registration("fam/", Kind.TASK, "test_names:resolve_family", "f", dynamic=True),
        Registration("fam/special", Kind.TASK, "/somewhere/special", "s"),
    ]
)


def test_a_dynamic_source_names_its_tasks_and_static_records_keep_theirs():
    assert resolve(["run", "--task", "fam/one"], DYNAMIC) == ["run", "--path", "/written/one"]
    assert resolve(["run", "--task", "fam/special"], DYNAMIC) == [
        "run",
        "--path",
        "/somewhere/special",
    ]
    assert resolve(["run", "-t", "tiny_task"], DYNAMIC) == ["run", "--path", "/somewhere/tiny_task"]


def test_a_name_the_dynamic_source_declines_is_a_harbor_reference():
    argv = ["run", "--task", "fam/decline"]
    assert resolve(argv, DYNAMIC) == argv


def test_a_dynamic_sources_refusal_is_its_own_error():
    with pytest.raises(TaskSourceError, match="cannot be written"):
        resolve(["run", "--task", "fam/broken"], DYNAMIC)
