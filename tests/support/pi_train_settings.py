"""One `TrainSettings` for the pi-train tests that build a run's settings without the command line.

Each test changes only what it is about; the rest is a small, valid run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from atoll.pi_train.training.run import TrainSettings

BASE = TrainSettings(
    base_model="tiny",
    renderer="qwen3",
    base_url="http://127.0.0.1:1",
    lora_rank=8,
    learning_rate=1e-4,
    groups_per_batch=2,
    group_size=2,
    iterations=1,
    max_tokens=16,
    languages=("python",),
)


def train_settings(**changes: Any) -> TrainSettings:
    """The base settings with `changes` applied."""
    return replace(BASE, **changes)
