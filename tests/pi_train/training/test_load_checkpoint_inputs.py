"""`--load-checkpoint`: which values name a training state to start from, and which do not.

The value becomes part of a run's settings in its manifest; a resume with
another value is refused like any other changed setting. The slow chain
(bootstrap state loaded by answer training) is test_checkpoint_chain.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.pi_train_settings import train_settings
from typer.testing import CliRunner

from atoll.pi_train.bootstrap.cli import bootstrap_app
from atoll.pi_train.cli import train_app
from atoll.pi_train.training.load_checkpoint import LoadCheckpointError, resolve
from atoll.pi_train.training.run import RunInputError, TrainSettings, prepare_manifest

HOSTED_STATE = "tinker://0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f:train:0/weights/final"
LOCAL_STATE = "tinker://model_5447f12d/weights/000003"


def _write_checkpoints(run_dir: Path, rows: list[dict]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "checkpoints.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("state", [HOSTED_STATE, LOCAL_STATE, "tinker://model_a/weights/final"])
def test_a_training_state_path_is_taken_as_it_is(state: str) -> None:
    assert resolve(state) == state


def test_a_bootstrap_run_directory_stands_for_its_final_state(tmp_path: Path) -> None:
    _write_checkpoints(
        tmp_path,
        [
            {"name": "000000", "epoch": 1, "state_path": "tinker://model_b/weights/000000"},
            {
                "name": "final",
                "epoch": 1,
                "state_path": "tinker://model_b/weights/final",
                "sampler_path": "tinker://model_b/final",
            },
        ],
    )
    assert resolve(str(tmp_path)) == "tinker://model_b/weights/final"


def test_an_rl_run_directory_stands_for_its_last_saved_state(tmp_path: Path) -> None:
    # An iteration saved for resuming only has a state; a sampler-only row names no state.
    _write_checkpoints(
        tmp_path,
        [
            {"name": "000001", "batch": 1, "state_path": "tinker://model_c/weights/000001"},
            {"name": "000002", "batch": 2, "state_path": "tinker://model_c/weights/000002"},
            {"name": "sampler", "batch": 2, "sampler_path": "tinker://model_c/000002"},
        ],
    )
    assert resolve(str(tmp_path)) == "tinker://model_c/weights/000002"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("tinker://run-1/sampler_weights/final", "is a sampler checkpoint"),
        ("tinker://model_5447f12d/final", "must be a tinker://RUN/weights/NAME"),
        ("tinker://model_a/weights/", "must be a tinker://RUN/weights/NAME"),
        ("tinker://model_a/weights/final/extra", "must be a tinker://RUN/weights/NAME"),
        ("https://example.org/weights/final", "must be a tinker:// training state"),
        ("model_a/weights/final", "must be a tinker:// training state"),
    ],
)
def test_what_names_no_training_state_is_refused(value: str, reason: str) -> None:
    with pytest.raises(LoadCheckpointError, match=reason):
        resolve(value)


def test_a_directory_without_a_saved_state_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LoadCheckpointError, match="no saved training state"):
        resolve(str(tmp_path))
    _write_checkpoints(tmp_path, [{"name": "s", "sampler_path": "tinker://model_d/s"}])
    with pytest.raises(LoadCheckpointError, match="no saved training state"):
        resolve(str(tmp_path))


@pytest.mark.parametrize("command", ["answer", "hidden", "shell", "bootstrap"])
def test_every_training_command_refuses_in_one_line_before_writing_anything(
    command: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    flags = ["--base-model", "tiny", "--out", str(out),
             "--load-checkpoint", "tinker://run-1/sampler_weights/final"]  # fmt: skip
    if command == "bootstrap":
        app, args = bootstrap_app, ["train", str(tmp_path / "corpus"), "--steps", "1", *flags]
    else:
        app, args = train_app, [command, *flags]
        if command == "answer":
            args += ["--store", str(tmp_path / "store")]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and "sampler checkpoint" in lines[0], done.output
    assert not out.exists()


def _settings(load_checkpoint: str | None) -> TrainSettings:
    return train_settings(load_checkpoint=load_checkpoint)


def _manifest(run_dir: Path, settings: TrainSettings) -> dict:
    return prepare_manifest(run_dir, "atoll pi train answer", settings, {}, {}, {})


def test_the_loaded_state_is_a_setting_of_the_run(tmp_path: Path) -> None:
    assert _manifest(tmp_path, _settings(LOCAL_STATE))["config"]["load_checkpoint"] == LOCAL_STATE
    _write_checkpoints(tmp_path, [{"name": "000001", "batch": 1, "state_path": LOCAL_STATE}])
    # The same value resumes, with more iterations too; another value or none is refused.
    _manifest(tmp_path, replace(_settings(LOCAL_STATE), iterations=3))
    for other in (HOSTED_STATE, None):
        with pytest.raises(RunInputError, match="load_checkpoint"):
            _manifest(tmp_path, _settings(other))


def test_a_run_from_before_the_flag_resumes_without_it(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, _settings(None))
    del manifest["config"]["load_checkpoint"]  # a manifest written before the setting existed
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    _write_checkpoints(tmp_path, [{"name": "000001", "batch": 1, "state_path": LOCAL_STATE}])
    _manifest(tmp_path, _settings(None))
    with pytest.raises(RunInputError, match="load_checkpoint"):
        _manifest(tmp_path, _settings(LOCAL_STATE))
