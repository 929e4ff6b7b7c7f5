"""`atoll pi train shell` refuses bad input before anything is written, with one clear reason.

The honest counterparts (the default languages with Julia left out, the
embedded sandbox, a key from the local server) are what the training run in
test_shell_training.py starts with.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from atoll.pi_train.run import RunInputError, TrainSettings
from atoll.pi_train.shell_env import Bounds
from atoll.pi_train.shell_train import ShellOptions, train_shell


def _settings(languages: tuple[str, ...] = ("python",)) -> TrainSettings:
    return TrainSettings(
        base_model="tiny",
        renderer="qwen3",
        base_url="http://127.0.0.1:1",
        lora_rank=8,
        learning_rate=1e-4,
        groups_per_batch=2,
        group_size=2,
        iterations=1,
        max_tokens=16,
        languages=languages,
    )


def _options(sandbox_url: str | None = None) -> ShellOptions:
    return ShellOptions(sandbox_url=sandbox_url, bounds=Bounds(), eval_instances=1, eval_every=0)


def _never(*_: object) -> None:
    raise AssertionError("nothing may start")


@pytest.mark.parametrize(
    ("languages", "sandbox_url", "key", "reason"),
    [
        (("python",), None, "", "TINKER_API_KEY is not set"),
        (("python", "ruby"), None, "tml-x", "no language ruby"),
        (("python",), "http://10.0.0.1:8080", "tml-x", "not on loopback"),
        (("python",), "http://sandbox.example:8080", "tml-x", "not on loopback"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    languages: tuple[str, ...],
    sandbox_url: str | None,
    key: str,
    reason: str,
) -> None:
    monkeypatch.setenv("TINKER_API_KEY", key)
    out = tmp_path / "run"
    with pytest.raises(RunInputError, match=reason) as raised:
        train_shell(_settings(languages), out, _options(sandbox_url), _never, _never)
    assert "\n" not in str(raised.value)
    assert not out.exists()
