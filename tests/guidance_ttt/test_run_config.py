"""The run configuration: files, agent-kwarg overrides, clear errors and the resume identity."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atoll.guidance_ttt.config import (
    IDENTITY_FIELDS,
    ConfigError,
    GuidanceConfig,
    IdentityChanged,
    from_agent_kwargs,
    load_config,
)


def test_defaults() -> None:
    config = load_config()
    assert (config.groups, config.rollouts, config.lora_rank) == (8, 16, 32)
    assert config.guidance_model == "Qwen/Qwen3-8B"
    assert config.prompt_mode == "summary_only"
    assert config.training == "on"
    assert config.executor_preset == "gpt-oss-local"
    assert config.executor_model == "openai/gpt-oss-120b"
    assert config.executor_base_url.startswith("http://127.0.0.1:")


def test_toml_file_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(
        'groups = 4\nrollouts = 2\nsteps = 3\nexecutor_preset = "openrouter-glm"\n'
        'state_dir = "runs/a"\ntraining = "off"\n'
    )
    config = load_config(path, {"steps": "5", "max-guidance-tokens": "2048"})
    assert (config.groups, config.rollouts, config.steps) == (4, 2, 5)
    assert config.max_guidance_tokens == 2048
    assert config.executor_model == "z-ai/glm-5.2"
    assert config.state_dir == Path("runs/a")
    assert config.training == "off"


def test_yaml_file_with_bare_on_off(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("G: 2\nR: 3\ntraining: off\ntensor_parallel_size: 2\n")
    config = load_config(path)
    assert (config.groups, config.rollouts, config.tensor_parallel_size) == (2, 3, 2)
    assert config.training == "off"


def test_agent_kwargs_as_harbor_passes_them(tmp_path: Path) -> None:
    path = tmp_path / "run.yml"
    path.write_text("groups: 2\n")
    # Harbor decodes JSON-looking values, so numbers arrive as ints and text as str.
    config = from_agent_kwargs(
        {
            "config": str(path),
            "rollouts": 4,
            "executor_preset": "openai",
            "executor_model": "gpt-5",
            "executor_base_url": "http://127.0.0.1:9999/v1",
            "guidance_model": 7,
            "reef_url": "http://127.0.0.1:8901",
        }
    )
    assert (config.groups, config.rollouts) == (2, 4)
    assert config.executor_model == "gpt-5"
    assert config.executor_base_url == "http://127.0.0.1:9999/v1"
    assert config.guidance_model == "7"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"gropus": "8"}, "unknown setting 'gropus'; known settings: groups, rollouts"),
        ({"groups": "eight"}, "setting 'groups': Input should be a valid integer"),
        ({"groups": "0"}, "setting 'groups': Input should be greater than or equal to 1"),
        ({"training": "maybe"}, "setting 'training': Input should be 'on', 'off' or 'tinker'"),
        (
            {"executor_preset": "gpt"},
            "setting 'executor_preset': unknown executor preset 'gpt'; choose one of "
            "gpt-oss-local (local), openrouter-glm (openrouter), openai",
        ),
        (
            {"rollouts": "1", "training": "on"},
            "rollouts must be at least 2 when training (got 1)",
        ),
        ({"prompt_mode": "full_code"}, "setting 'prompt_mode'"),
        ({"executor_preset": "openai"}, "executor_model is required with executor_preset 'openai'"),
    ],
)
def test_bad_settings_get_one_clear_line(overrides: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, overrides)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("spelling", "preset"),
    [
        ("local", "gpt-oss-local"),
        ("OpenRouter", "openrouter-glm"),
        ("gpt-oss-local", "gpt-oss-local"),
    ],
)
def test_preset_aliases_are_stored_as_the_preset_name(spelling: str, preset: str) -> None:
    config = load_config(None, {"executor_preset": spelling})
    assert config.executor_preset == preset
    assert config.identity()["executor_preset"] == preset  # a resume compares the name


def test_one_rollout_per_group_is_allowed_only_search_only() -> None:
    assert load_config(None, {"rollouts": 1, "training": "off"}).rollouts == 1


def test_bad_files(tmp_path: Path) -> None:
    bad = tmp_path / "run.toml"
    bad.write_text("groups = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    unknown = tmp_path / "run.toml"
    unknown.write_text("colour = 1\n")
    with pytest.raises(ConfigError, match="run.toml: unknown setting 'colour'"):
        load_config(unknown)
    listing = tmp_path / "run.yaml"
    listing.write_text("- 1\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(listing)
    with pytest.raises(ConfigError, match="unknown config format"):
        load_config(tmp_path / "run.ini")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(tmp_path / "absent.toml")


def test_config_is_immutable() -> None:
    config = load_config()
    with pytest.raises(ValueError):
        config.groups = 3  # type: ignore[misc]


def test_identity_subset_and_first_change() -> None:
    config = load_config(None, {"groups": 4})
    identity = config.identity()
    assert tuple(identity) == IDENTITY_FIELDS
    assert "steps" not in identity and "state_dir" not in identity
    config.check_identity(identity)
    # STEPS and concurrency may change on resume; identity does not.
    load_config(None, {"groups": 4, "steps": 99, "judge_concurrency": 1}).check_identity(identity)
    changed = load_config(None, {"groups": 4, "rollouts": 8, "lora_rank": 16})
    assert changed.identity_change(identity) == "rollouts changed from 16 to 8"
    with pytest.raises(IdentityChanged, match="cannot resume: rollouts changed from 16 to 8"):
        changed.check_identity(identity)
    other_executor = load_config(None, {"groups": 4, "executor_preset": "openrouter-glm"})
    assert other_executor.identity_change(identity).startswith("executor_preset changed")
    partial = dict(identity)
    del partial["lora_rank"]
    assert config.identity_change(partial) == "lora_rank is missing from the saved run"


#: What each setting's description must name: its unit, or what the setting does. A new
#: setting fails until it is listed here, with the words that make its description specific.
NAMES_ITS_UNIT_OR_EFFECT = {
    "groups": "per step",
    "rollouts": "per group",
    "steps": "not an increment on resume",
    "max_guidance_tokens": "tokens",
    "max_executor_tokens": "tokens",
    "sequence_length": "tokens",
    "lora_rank": "LoRA adapter",
    "tensor_parallel_size": "GPUs",
    "guidance_model": "trained guidance policy",
    "prompt_mode": "sees of the parent",
    "guidance_concurrency": "requests in flight",
    "executor_concurrency": "requests in flight",
    "judge_concurrency": "scored at once",
    "training": "trains",
    "tinker_base_url": "Tinker service",
    "tinker_base_model": "trained",
    "renderer": "guidance prompt",
    "learning_rate": "Adam",
    "kl_coef": "advantage",
    "tinker_load_checkpoint": "weights start the LoRA",
    "sampling_seed": "same guidance",
    "tinker_policy_port": "port",
    "executor_preset": "default from it",
    "executor_base_url": "base URL",
    "executor_model": "model name",
    "state_dir": "resume state",
    "reef_url": "Reef server",
    "guidance_base_url": "Reef proxies",
    "guidance_upstream_model": "model name",
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def test_fields_are_documented() -> None:
    """The descriptions are the user documentation (and `--help`): each says more than its
    setting's name, and names the unit or the effect listed above."""
    fields = GuidanceConfig.model_fields
    assert set(fields) == set(NAMES_ITS_UNIT_OR_EFFECT)
    for name, field in fields.items():
        description = field.description or ""
        assert NAMES_ITS_UNIT_OR_EFFECT[name].lower() in description.lower(), (name, description)
        beyond_the_name = _words(description) - _words(name.replace("_", " "))
        assert len(beyond_the_name) >= 3, (name, description)
        assert description.endswith("."), (name, description)


@pytest.mark.parametrize(
    ("name", "other"),
    [
        ("tinker_base_model", "Qwen/Qwen3-4B"),
        ("renderer", "qwen3_disable_thinking"),
        ("learning_rate", 1e-4),
        ("kl_coef", 0.0),
    ],
)
def test_what_the_tinker_trainer_makes_of_samples_is_identity_of_tinker_runs_only(
    name: str, other: object
) -> None:
    tinker = load_config(None, {"training": "tinker", "groups": 4})
    changed = load_config(None, {"training": "tinker", "groups": 4, name: other})
    assert name in tinker.identity()
    assert changed.identity_change(tinker.identity()) == (
        f"{name} changed from {tinker.identity()[name]!r} to {other!r}"
    )
    # A search-only run never reads them: changing one does not block its resume.
    off = load_config(None, {"training": "off", "groups": 4})
    assert name not in off.identity()
    assert (
        load_config(None, {"training": "off", "groups": 4, name: other}).identity_change(
            off.identity()
        )
        is None
    )


def test_training_on_tinker_settings() -> None:
    config = load_config(None, {"training": "tinker", "tinker_policy_port": 31000})
    assert config.tinker_base_model == config.guidance_model
    assert config.tinker_policy_url == "http://127.0.0.1:31000/v1"
    with pytest.raises(ConfigError, match="rollouts must be at least 2 when training"):
        load_config(None, {"training": "tinker", "rollouts": 1})
    with pytest.raises(ConfigError, match="guidance_base_url is not used with training=tinker"):
        load_config(None, {"training": "tinker", "guidance_base_url": "http://127.0.0.1:9/v1"})
