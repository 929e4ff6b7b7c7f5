"""A `training=tinker` run's training, step by step: metric lines and a picture.

Each committed step's summary carries the Tinker update's metrics (rewards,
advantages, group baselines, loss, KL, the sampler the next step serves,
timings). `metrics_line` flattens them, with the archive's best raw score
after the step, into one JSON-ready dict; a key the update did not record
(a degenerate step has no loss) reads as None. `plot_training` draws reward
and best score per step above loss and KL per step, with matplotlib's Agg
backend so that it never needs a display, and writes the PNG atomically.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atoll.guidance_ttt.harbor.score_plot import save_png
from atoll.guidance_ttt.state.run_report import StepRow

# Keys copied from the step's `train_metrics` as they were recorded (None when absent).
_TRAIN_KEYS = (
    "reward_mean",
    "reward_max",
    "advantage_min",
    "advantage_mean",
    "advantage_max",
    "betas",
    "kl_policy_base",
    "loss",
    "kl_sample_train",
    "non_constant_groups",
    "trained_samples",
    "updated",
    "sampler_path",
    "seconds",
)


def metrics_line(row: StepRow) -> dict[str, Any]:
    """One committed step's training metrics, with the archive's best raw score after it."""
    summary = row.summary
    metrics = summary.get("train_metrics") or {}
    line: dict[str, Any] = {"step": row.step}
    line.update({key: metrics.get(key) for key in _TRAIN_KEYS})
    if line["non_constant_groups"] is None:
        line["non_constant_groups"] = summary.get("non_constant_groups")
    line["best_raw_score_so_far"] = row.archive_best
    line["elapsed_s"] = summary.get("elapsed_s")
    return line


def plot_training(rows: Sequence[StepRow], path: Path, *, score_label: str, title: str) -> Path:
    """Write reward (and best raw score so far) and loss/KL per step to `path` (PNG)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    lines = [metrics_line(row) for row in rows]
    steps = [line["step"] for line in lines]
    figure = Figure(figsize=(7, 7), dpi=100)
    FigureCanvasAgg(figure)
    rewards, losses = figure.subplots(2, 1, sharex=True)
    rewards.plot(steps, _series(lines, "reward_mean"), marker="o", label="reward mean")
    rewards.plot(steps, _series(lines, "reward_max"), marker="^", label="reward max")
    rewards.set_ylabel("reward")
    rewards.set_title(title)
    best = rewards.twinx()
    best.plot(
        steps,
        _series(lines, "best_raw_score_so_far"),
        color="tab:green",
        linestyle="--",
        marker="s",
        label="best raw score so far",
    )
    best.set_ylabel(score_label)
    handles, labels = rewards.get_legend_handles_labels()
    more_handles, more_labels = best.get_legend_handles_labels()
    rewards.legend(handles + more_handles, labels + more_labels, loc="best")
    losses.plot(steps, _series(lines, "loss"), marker="o", label="loss")
    losses.plot(steps, _series(lines, "kl_sample_train"), marker="^", label="KL(sample, train)")
    losses.set_xlabel("step")
    losses.set_ylabel("loss / KL")
    losses.legend(loc="best")
    for axes in (rewards, losses):
        axes.grid(True, alpha=0.3)
        if steps:
            axes.set_xticks(steps)
    return save_png(figure, path)


def _series(lines: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [_nan(line.get(key)) for line in lines]


def _nan(value: object) -> float:
    """A plottable number: NaN for an absent or non-numeric value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)
