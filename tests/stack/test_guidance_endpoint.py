"""The guidance endpoint of a search-only run comes from the run config unless the stack options name one.

Job plugins that `atoll run` adds by default get no `--pk` options, so the
run config (the agent's kwargs) must be enough to start Reef in upstream mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_support import guidance_stack_config

from atoll.guidance_ttt.config import load_config
from atoll.stack.errors import StackError
from atoll.stack.options import StackOptions
from atoll.stack.planning import plan


def _settings(tmp_path: Path, overrides: dict) -> dict:
    return {"state_dir": str(tmp_path / "state"), "training": "off", **overrides}


def _config(tmp_path: Path, **overrides):
    """The run config, as Guidance-TTT reads it."""
    return load_config(None, _settings(tmp_path, overrides))


def _stack_config(tmp_path: Path, **overrides):
    """The stack's config, as Guidance-TTT hands it over."""
    return guidance_stack_config(_settings(tmp_path, overrides))


def test_the_upstream_model_defaults_to_the_guidance_model(tmp_path: Path) -> None:
    config = _config(tmp_path, guidance_model="Qwen/Qwen3-0.6B")
    assert config.guidance_base_url is None
    assert config.guidance_upstream_model == "Qwen/Qwen3-0.6B"
    named = _config(tmp_path, guidance_upstream_model="qwen3-0.6b-instruct")
    assert named.guidance_upstream_model == "qwen3-0.6b-instruct"


def test_the_endpoint_is_a_location_not_part_of_the_run_identity(tmp_path: Path) -> None:
    before = _config(tmp_path, guidance_base_url="http://127.0.0.1:7001/v1")
    moved = _config(
        tmp_path, guidance_base_url="http://127.0.0.1:7002/v1", guidance_upstream_model="other"
    )
    assert "guidance_base_url" not in before.identity()
    assert moved.identity_change(before.identity()) is None


def test_search_only_reef_proxies_to_the_configured_endpoint(tmp_path: Path) -> None:
    config = _stack_config(tmp_path, guidance_base_url="http://127.0.0.1:7001/v1/")
    planned = plan(config, StackOptions(stack_dir=tmp_path / "stack"))
    assert planned.upstream == ("http://127.0.0.1:7001", config.guidance_model)
    named = _stack_config(
        tmp_path, guidance_base_url="http://127.0.0.1:7001/v1", guidance_upstream_model="up"
    )
    assert plan(named, StackOptions()).upstream == ("http://127.0.0.1:7001", "up")


def test_explicit_stack_options_win(tmp_path: Path) -> None:
    config = _stack_config(
        tmp_path, guidance_base_url="http://127.0.0.1:7001/v1", guidance_upstream_model="up"
    )
    options = StackOptions(upstream_url="http://127.0.0.1:7009/v1", upstream_model="pk-model")
    assert plan(config, options).upstream == ("http://127.0.0.1:7009", "pk-model")


def test_search_only_without_any_endpoint_names_both_ways_to_give_one(tmp_path: Path) -> None:
    with pytest.raises(StackError) as caught:
        plan(_stack_config(tmp_path), StackOptions())
    assert "--ak guidance_base_url=URL" in str(caught.value)
    assert "--upstream-url URL" in str(caught.value)
