"""A run's `summary.md` and reward plot, from the cookbook's `metrics.jsonl`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_text
from atoll.pi_train import replay

# Columns of the summary: (heading, metrics.jsonl key).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("reward", "env/all/reward/total"),
    ("pass fraction", "env/all/pass_fraction"),
    ("all cases", "env/all/all_cases"),
    ("submission failures", "env/all/submission_failure"),
    ("tokens", "env/all/ac_tokens_per_turn"),
    ("seconds", "time/total"),
)


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            rows.append(json.loads(line))
    return rows


def dropped_groups(run_dir: Path) -> dict[int, int]:
    """Groups left out of each iteration's update because the sandbox failed a check.

    Read from the launching process's `infrastructure_failures.jsonl`; a
    group with two failed checks in one iteration is one dropped group.
    """
    path = run_dir / "infrastructure_failures.jsonl"
    if not path.is_file():
        return {}
    seen: set[tuple[int, str]] = set()
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            seen.add((int(row["iteration"]), str(row["task"])))
    counts: dict[int, int] = {}
    for iteration, _task in seen:
        counts[iteration] = counts.get(iteration, 0) + 1
    return counts


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "–" if value is None else str(value)


def write(run_dir: Path, manifest: dict[str, Any]) -> Path:
    rows = read_metrics(run_dir)
    plot = _plot(run_dir, rows)
    lines = [
        f"# {manifest['command']} — {run_dir.name}",
        "",
        f"Base model `{manifest['config']['base_model']}`, renderer "
        f"`{manifest['config']['renderer']}`, {manifest['config']['groups_per_batch']} groups × "
        f"{manifest['config']['group_size']} per iteration, task set "
        f"`{manifest['task_set']['digest'][:16]}`.",
        "",
    ]
    if manifest["config"].get("load_checkpoint"):
        lines += [f"Started from the training state `{manifest['config']['load_checkpoint']}`.", ""]
    if plot is not None:
        lines += [f"![mean reward per iteration]({plot.name})", ""]
    lines += replay.report_lines(manifest, rows)
    dropped = dropped_groups(run_dir)
    if dropped:
        lines += [
            f"{sum(dropped.values())} group(s) left out of the update: the sandbox could not "
            "run a check (an infrastructure failure is never a reward).",
            "",
        ]
    # A mode may name its own columns in its manifest (`summary_columns`: [heading, key]).
    columns = [tuple(c) for c in manifest.get("summary_columns", COLUMNS)]
    headings = [h for h, _ in columns] + ["groups dropped (infrastructure)"]
    lines.append("| iteration | " + " | ".join(headings) + " |")
    lines.append("|---" * (len(headings) + 1) + "|")
    for row in rows:
        step = row.get("step", row.get("progress/batch"))
        cells = [cell(row.get(key)) for _, key in columns]
        cells.append(str(dropped.get(step, 0)) if isinstance(step, int) else "–")
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    lines.append("")
    out = run_dir / "summary.md"
    atomic_write_text(out, "\n".join(lines))
    return out


def _plot(run_dir: Path, rows: list[dict[str, Any]]) -> Path | None:
    points = [
        (row.get("step", i), row["env/all/reward/total"])
        for i, row in enumerate(rows)
        if "env/all/reward/total" in row
    ]
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.2))
    axes.plot([p[0] for p in points], [p[1] for p in points], marker="o")
    axes.set_xlabel("iteration")
    axes.set_ylabel("mean reward")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    out = run_dir / "reward.png"
    tmp = run_dir / ".reward.png.tmp"
    figure.savefig(tmp, format="png")
    plt.close(figure)
    tmp.replace(out)
    return out
