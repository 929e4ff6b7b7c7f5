"""Settings from `--ak`: names, checks, and the API key read from the environment only."""

from __future__ import annotations

import json

import pytest

from atoll.pi import pi_config
from atoll.pi.settings import SettingsError, from_kwargs


def test_kwargs_fill_the_settings_and_harbor_model_stays_whole():
    settings = from_kwargs(
        {"base_url": "http://127.0.0.1:8000/v1/", "max_turns": "7", "thinking": "high"},
        model_name="Qwen/Qwen3-8B",
    )
    assert settings.model == "Qwen/Qwen3-8B"
    assert settings.base_url == "http://127.0.0.1:8000/v1"
    assert settings.max_turns == 7
    assert settings.thinking == "high"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "http://x/v1", "model": "m", "turns_max": 3}, "unknown setting 'turns_max'"),
        ({"base_url": "ftp://x", "model": "m"}, "--ak base_url: must be an http(s) URL"),
        ({"base_url": "http://x/v1", "model": "m", "api_key_env": "!cat key"}, "api_key_env"),
        ({"base_url": "http://x/v1", "model": "m", "thinking": "max"}, "--ak thinking"),
        ({"base_url": "http://x/v1", "model": "m", "max_turns": 0}, "--ak max_turns"),
        ({"base_url": "http://x/v1"}, "--ak model"),
    ],
)
def test_bad_settings_are_one_line_naming_the_setting(kwargs, message):
    with pytest.raises(SettingsError) as caught:
        from_kwargs(kwargs)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_key_names_its_variable():
    settings = from_kwargs({"base_url": "http://x/v1", "model": "m", "api_key_env": "NO_SUCH_KEY"})
    with pytest.raises(SettingsError, match="NO_SUCH_KEY"):
        settings.api_key({})
    assert settings.api_key({"NO_SUCH_KEY": "k"}) == "k"


def test_the_config_names_the_key_variable_never_the_key(tmp_path):
    settings = from_kwargs(
        {"base_url": "http://x/v1", "model": "m", "api_key_env": "MY_KEY", "thinking": "low"}
    )
    config = pi_config.write(tmp_path / "config", settings)
    models = json.loads((tmp_path / "config" / "models.json").read_text())
    provider = models["providers"][pi_config.PROVIDER]
    assert provider["apiKey"] == "MY_KEY"
    assert provider["api"] == "openai-completions"
    assert provider["models"][0]["reasoning"] is True  # a thinking level needs a reasoning model
    assert (tmp_path / "config").stat().st_mode & 0o777 == 0o700
    # The hash changes with what Pi is run with.
    assert config.sha256(["--mode", "json"]) != config.sha256(["--mode", "json", "--thinking", "x"])
