"""The run's progress as a picture: best and median archive score after each committed step.

A PNG beside the trial's logs lets a reader see at a glance whether the
search improved and whether the archive as a whole moved with its best
program. matplotlib's Agg backend is used explicitly so that plotting never
needs a display, and the file is written atomically like every other output.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from atoll.core.durable import atomic_write_bytes
from atoll.guidance_ttt.state.run_report import StepRow

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_scores(rows: Sequence[StepRow], path: Path, *, score_label: str, title: str) -> Path:
    """Write the best and median archive raw score per step to `path` (PNG)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    steps = [row.step for row in rows]
    best = [_nan(row.archive_best) for row in rows]
    median = [_nan(row.archive_median) for row in rows]
    figure = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    axes.plot(steps, best, marker="o", label="best in archive")
    axes.plot(steps, median, marker="s", linestyle="--", label="median of archive")
    axes.set_xlabel("step")
    axes.set_ylabel(score_label)
    axes.set_title(title)
    if steps:
        axes.set_xticks(steps)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    return save_png(figure, path)


def save_png(figure: Figure, path: Path) -> Path:
    """Lay out `figure` and write it to `path` as a PNG, atomically."""
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value
