"""`--load-checkpoint`: the training state a run starts from, checked before anything is written.

A training run chains onto an earlier one (bootstrap, then shell RL, then
answer RL) by loading that run's saved training state: the cookbook's
`load_checkpoint_path`, which it opens with `create_training_client_from_state`
(weights only, a fresh optimizer). That is a state path (`tinker://RUN/weights/NAME`,
the `state_path` of a `checkpoints.jsonl` row), never a sampler path
(`.../sampler_weights/...`, which only serves). An earlier run's directory is
accepted too and stands for its last saved state.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import typer

SCHEME = "tinker://"


class LoadCheckpointError(ValueError):
    """A `--load-checkpoint` value that names no training state; the message says what does."""


def resolve(value: str) -> str:
    """The tinker:// training-state path `value` names (itself, or a run directory's last state)."""
    if value.startswith(SCHEME):
        parts = value[len(SCHEME) :].split("/")
        if len(parts) == 3 and all(parts) and parts[1] == "weights":
            return value
        if len(parts) == 3 and parts[1] == "sampler_weights":
            raise LoadCheckpointError(
                f"--load-checkpoint {value} is a sampler checkpoint; give the training state "
                "saved with it (state_path in the run's checkpoints.jsonl)"
            )
        raise LoadCheckpointError(
            f"--load-checkpoint must be a tinker://RUN/weights/NAME training state (got {value!r})"
        )
    path = Path(value)
    if path.is_dir():
        state = last_state(path)
        if state is None:
            raise LoadCheckpointError(
                f"--load-checkpoint {value} is a directory with no saved training state "
                "(no state_path in checkpoints.jsonl)"
            )
        return resolve(state)
    raise LoadCheckpointError(
        f"--load-checkpoint must be a tinker:// training state or a run directory (got {value!r})"
    )


def last_state(run_dir: Path) -> str | None:
    """The `state_path` of the last row of `run_dir`'s checkpoints.jsonl that has one."""
    path = run_dir / "checkpoints.jsonl"
    if not path.is_file():
        return None
    found = None
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if isinstance(row, dict) and isinstance(row.get("state_path"), str):
                found = row["state_path"]
    return found


def load_checkpoint_option() -> Any:
    """The `--load-checkpoint` option every training command takes."""
    return typer.Option(
        None,
        "--load-checkpoint",
        help="Start from this training state (tinker://RUN/weights/NAME, an earlier run's "
        "state_path; or that run's directory: its last state) \\[default: the base model]. "
        "Part of the run's settings: a resume must give the same.",
    )
