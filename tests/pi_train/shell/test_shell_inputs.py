"""`atoll pi train shell` refuses bad input before anything is written, with one clear reason.

The honest counterparts (the default languages with Julia left out, the
embedded sandbox, a key from the local server) are what the training run in
test_shell_training.py starts with.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pi_train_settings import train_settings
from typer.testing import CliRunner

from atoll.pi_train.cli import train_app
from atoll.pi_train.shell.episode import Bounds
from atoll.pi_train.shell.train import ShellOptions, train_shell
from atoll.pi_train.training.run import RunInputError, TrainSettings


def _settings(languages: tuple[str, ...] = ("python",)) -> TrainSettings:
    return train_settings(languages=languages)


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


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (["--max-steps", "0"], "--max-steps must be at least 1 (got 0)"),
        (["--max-tool-calls", "-1"], "--max-tool-calls must be at least 1 (got -1)"),
        (["--eval-every", "-2"], "--eval-every must be at least 0 (got -2)"),
        (["--eval-samples", "0"], "--eval-samples must be at least 1 (got 0)"),
        (["--max-tokens", "300", "--max-episode-tokens", "300"], "must be below"),
        (["--languages", " , "], "--languages names no language"),
        (["--iterations", "0"], "--iterations must be at least 1 (got 0)"),
    ],
)
def test_bad_flags_are_one_error_line_and_status_2(
    tmp_path: Path, flags: list[str], reason: str
) -> None:
    """The shell command's own checks and the common ones it shares with `hidden` and `answer`."""
    out = tmp_path / "run"
    done = CliRunner().invoke(
        train_app, ["shell", "--base-model", "tiny", "--out", str(out), *flags]
    )
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and reason in lines[0], done.output
    assert not out.exists()


@pytest.mark.slow
def test_a_token_bound_that_cannot_hold_the_first_turn_is_refused_before_sampling(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    """The trainer checks every task's first prompt against --max-episode-tokens up front.

    The tiny model's first prompts are well over 200 tokens (the tool schemas alone), so
    the run stops with one line and status 2, and nothing was trained.
    """
    from support.tinker_local import run_atoll

    out = tmp_path / "run"
    done = run_atoll(
        venv_bin, server_env, "pi", "train", "shell", "--base-model", str(tiny_model),
        "--languages", "python", "--groups-per-batch", "1", "--group-size", "2",
        "--iterations", "1", "--max-tokens", "16", "--max-episode-tokens", "200",
        "--eval-instances", "0", "--out", str(out), timeout=600,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    refusal = [line for line in done.stderr.splitlines() if "cannot hold the first turn" in line]
    assert len(refusal) == 1 and "--max-episode-tokens 200" in refusal[0]
    assert "give at least" in refusal[0] and "Traceback" not in done.stderr
    assert not (out / "checkpoints.jsonl").exists()
