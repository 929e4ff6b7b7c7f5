"""A run's `summary.md` and reward plot, from the cookbook's `metrics.jsonl`.

Training rows are the cookbook's `env/...` metrics; a held-out evaluation's
are its `test/env/...` metrics, in the row of the iteration evaluated
(atoll.pi_train.training.held_out). The table shows both, and the summary says what
the held-out set is, or that the run has none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_text
from atoll.pi_train.answer import replay
from atoll.pi_train.training import curves, held_out

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


def dropped_groups(run_dir: Path, phase: str = "train") -> dict[int, int]:
    """Groups of each iteration the sandbox failed a check of: left out of the update
    (`train`), or of the held-out metrics (`eval`).

    Read from the launching process's `infrastructure_failures.jsonl` (a line
    without a phase is a training one); a group with two failed checks in one
    iteration is one dropped group.
    """
    path = run_dir / "infrastructure_failures.jsonl"
    if not path.is_file():
        return {}
    seen: set[tuple[int, str]] = set()
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("phase", "train") == phase:
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
    has_held_out, held_out_line = held_out.description(manifest)
    plot = curves.plot(run_dir, rows, has_held_out)
    lines = [
        f"# {manifest['command']} — {run_dir.name}",
        "",
        f"Base model `{manifest['config']['base_model']}`, renderer "
        f"`{manifest['config']['renderer']}`, {manifest['config']['groups_per_batch']} groups × "
        f"{manifest['config']['group_size']} per iteration, task set "
        f"`{manifest['task_set']['digest'][:16]}`.",
        "",
    ]
    order = manifest.get("batches")
    if isinstance(order, dict):
        lines += [
            f"Every batch mixes families ({', '.join(order['families'])}) and languages "
            f"({', '.join(order['languages'])}): order `{order['order']}`, seed {order['seed']}.",
            "",
        ]
    if manifest["config"].get("load_checkpoint"):
        lines += [f"Started from the training state `{manifest['config']['load_checkpoint']}`.", ""]
    if plot is not None:
        shown = "training and held-out reward" if has_held_out else "training reward"
        lines += [f"![{shown} per iteration]({plot.name})", ""]
    lines += [held_out_line, ""]
    lines += replay.report_lines(manifest, rows)
    dropped = dropped_groups(run_dir)
    if dropped:
        lines += [
            f"{sum(dropped.values())} group(s) left out of the update: the sandbox could not "
            "run a check (an infrastructure failure is never a reward).",
            "",
        ]
    unjudged = dropped_groups(run_dir, "eval")
    if unjudged:
        lines += [
            f"{sum(unjudged.values())} held-out group(s) left out of the held-out metrics: the "
            "sandbox could not run a check (never a score).",
            "",
        ]
    # A mode may name its own columns in its manifest (`summary_columns`: [heading, key]).
    columns = [tuple(c) for c in manifest.get("summary_columns", COLUMNS)]
    if has_held_out:
        columns += held_out.columns(rows)
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
