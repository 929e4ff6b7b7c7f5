"""A run's `reward.png`: training and held-out reward per iteration, and held-out pass@k.

The training reward alone says how the batches went, each batch of other
tasks; the held-out reward, on instances never trained on, says whether any
of it generalises, and pass@k says whether held-out tasks get solved at all.
One panel of rewards (training every iteration, held-out at the iterations
evaluated), and one of pass@k when the run has any; a run without a held-out
set says so in the figure's title, as the summary does.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_bytes
from atoll.pi_train.training import held_out

TRAIN_REWARD = "env/all/reward/total"
PLOT = "reward.png"


def _step(row: dict[str, Any], position: int) -> int:
    step = row.get("step", row.get("progress/batch", position))
    return step if isinstance(step, int) else position


def _points(rows: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    found = [
        (_step(row, i), float(row[key]))
        for i, row in enumerate(rows)
        if isinstance(row.get(key), int | float) and math.isfinite(float(row[key]))
    ]
    return [s for s, _ in found], [v for _, v in found]


def plot(run_dir: Path, rows: list[dict[str, Any]], has_held_out: bool) -> Path | None:
    """Write `run_dir/reward.png` (atomically) and return it; None when no row has a reward."""
    train = _points(rows, TRAIN_REWARD)
    tested = _points(rows, held_out.HELD_OUT_REWARD)
    if not train[0] and not tested[0]:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    passes = [(heading, _points(rows, key)) for heading, key in held_out.pass_at_columns(rows)]
    panels = 2 if passes else 1
    figure = Figure(figsize=(7, 3.4 * panels), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    rewards = axes[0]
    rewards.plot(*train, marker="o", label="training (mean over the batch)")
    if tested[0]:
        rewards.plot(*tested, marker="s", linestyle="--", label="held-out (mean)")
    rewards.set_ylabel("mean reward")
    rewards.set_title("reward per iteration" if has_held_out else "reward (no held-out set)")
    rewards.legend(loc="best")
    if passes:
        for heading, points in passes:
            axes[1].plot(*points, marker="o", label=heading)
        axes[1].set_ylabel("held-out pass@k")
        axes[1].set_ylim(-0.05, 1.05)
        axes[1].legend(loc="best")
    axes[-1].set_xlabel("iteration")
    for panel in axes:
        panel.grid(alpha=0.3)
        panel.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    out = run_dir / PLOT
    atomic_write_bytes(out, buffer.getvalue())
    return out
