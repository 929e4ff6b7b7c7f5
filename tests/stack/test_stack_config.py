"""The stack's own config: what it accepts from an agent or a file, and who reads a run config file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from atoll.core.records import Kind, Registration, StackUse
from atoll.core.registry import Registry
from atoll.core.registry import load as load_registry
from atoll.stack.config import StackConfig, file_reader, load, read_file, stack_config
from atoll.stack.errors import StackError


def probe_settings(options: dict[str, Any], model_name: str | None) -> dict[str, Any]:
    """A second agent's reading of its options: its own names, the stack's settings out."""
    if "size" in options and not str(options["size"]).isdigit():
        raise ValueError(f"size must be a whole number, not {options['size']!r}")
    return {"groups": int(options.get("size", 2)), "training": "off"}


def _agent(name: str, config: str = "test_stack_config:probe_settings") -> Registration:
    return Registration(
        name, Kind.AGENT, f"pkg.{name}:Agent", "a", f"atoll-{name}",
        stack=StackUse("reef-stack", config),
    )  # fmt: skip


PLAIN = Registration("plain", Kind.AGENT, "pkg.plain:Agent", "runs on no stack")


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {"groups": 8, "rollouts": 16, "training": "on", "guidance_upstream_model": "Qwen/Qwen3-8B"}),
        ({"groups": "3", "rollouts": "2"}, {"groups": 3, "rollouts": 2}),
        ({"training": False, "rollouts": 1}, {"training": "off", "rollouts": 1}),  # YAML's `off`
        ({"guidance-model": 7, "state_dir": "/tmp/x"}, {"guidance_model": "7", "state_dir": Path("/tmp/x")}),
        ({"executor_served_locally": True, "executor_model": "m"}, {"executor_served_locally": True}),
    ],
    ids=["defaults", "text-numbers", "yaml-off", "spellings", "executor"],
)  # fmt: skip
def test_everyday_settings_are_accepted(settings: dict, expected: dict) -> None:
    config = stack_config(settings)
    assert {name: getattr(config, name) for name in expected} == expected


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"executor_preset": "local"}, "unknown setting 'executor_preset'; known settings: groups, "),
        ({"groups": "zero"}, "setting 'groups': Input should be a valid integer"),
        ({"rollouts": 1}, "rollouts must be at least 2 when training (got 1)"),
        ({"training": "maybe"}, "setting 'training': Input should be 'on' or 'off'"),
    ],
    ids=["unknown", "not-a-number", "one-rollout-training", "training"],
)  # fmt: skip
def test_bad_settings_are_one_line(settings: dict, message: str) -> None:
    with pytest.raises(StackError) as caught:
        stack_config(settings)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_the_stack_reads_its_own_settings_from_toml_and_yaml(tmp_path: Path) -> None:
    (tmp_path / "run.toml").write_text('groups = 4\ntraining = "off"\n')
    (tmp_path / "run.yaml").write_text("groups: 5\ntraining: off\n")
    (tmp_path / "empty.yml").write_text("")
    assert read_file(tmp_path / "run.toml") == {"groups": 4, "training": "off"}
    assert load(tmp_path / "run.yaml", {"steps": "2"}, None).model_dump(
        include={"groups", "training", "steps"}
    ) == {"groups": 5, "training": "off", "steps": 2}
    assert load(tmp_path / "empty.yml", {}, None) == StackConfig()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("run.json", "{}", "unknown config format; use a .toml, .yaml or .yml file"),
        ("run.toml", "groups = = 4", "not valid TOML"),
        ("run.yaml", "- 1\n- 2\n", "must be a mapping of setting names to values"),
        ("missing.toml", None, "cannot be read"),
    ],
    ids=["format", "toml", "list", "missing"],
)
def test_a_file_the_stack_cannot_read_is_one_line(tmp_path, name, text, message) -> None:
    if text is not None:
        (tmp_path / name).write_text(text)
    with pytest.raises(StackError, match=message):
        read_file(tmp_path / name)


def test_the_one_installed_agent_that_runs_on_the_stack_reads_a_run_config() -> None:
    probe = _agent("probe")
    assert file_reader(None, Registry([PLAIN, probe])) == probe
    assert file_reader(None, Registry([PLAIN])) is None  # the stack reads the file itself
    several = Registry([PLAIN, probe, _agent("other")])
    assert file_reader("other", several).name == "other"
    assert file_reader("pkg.probe:Agent", several) == probe
    with pytest.raises(StackError) as caught:
        file_reader(None, several)
    assert str(caught.value).startswith(
        "several installed agents run on the reef-stack stack (other, probe); "
        "name the one whose run config this is with --agent NAME"
    )
    with pytest.raises(StackError, match=r"^agent 'plain' does not run on the reef-stack stack"):
        file_reader("plain", several)


def test_the_reader_turns_the_options_into_the_stacks_config() -> None:
    probe = _agent("probe")
    assert load(None, {"size": "6"}, probe).groups == 6
    with pytest.raises(StackError) as caught:
        load(None, {"size": "big"}, probe)
    assert str(caught.value) == "size must be a whole number, not 'big'"  # as the agent says it
    with pytest.raises(StackError, match=r"^agent 'broken' \(atoll-broken\): cannot import "):
        load(None, {}, _agent("broken", "no_such_module_here:settings"))


def test_guidance_ttt_reads_its_own_run_config_for_the_stack(tmp_path: Path) -> None:
    reader = file_reader()  # this workspace installs Guidance-TTT, the one such agent
    assert reader is not None and reader.name == "guidance-ttt"
    run_toml = tmp_path / "run.toml"
    run_toml.write_text(
        'g = 3\nexecutor_preset = "openai"\nexecutor_model = "m"\njudge_concurrency = 2\n'
    )
    config = load(run_toml, {"steps": "4"}, reader)
    assert (config.groups, config.steps, config.executor_model) == (3, 4, "m")
    assert not config.executor_served_locally
    run_toml.write_text("judge_concurrency = 0\n")  # a setting of the agent's, not the stack's
    with pytest.raises(StackError, match=r"^setting 'judge_concurrency': "):
        load(run_toml, {}, reader)
    assert reader == load_registry().agent("guidance-ttt")
