"""The trial's record of a run: per-step JSON lines, a score plot, a run summary, Harbor's context.

With `training=tinker` the trial also gets the update's metrics per step and
a plot of reward, loss and KL; other training modes write neither file.

Everything here is rebuilt from the run's durable state after the controller
returns (or fails), so the files always describe exactly the committed steps.
The training mode is written into each of them: a search-only run must never
be mistaken for a trained one.
"""

from __future__ import annotations

import json
from pathlib import Path

from harbor.models.agent.context import AgentContext

from atoll.core.durable import atomic_write_bytes, atomic_write_json
from atoll.guidance_ttt.config import GuidanceConfig
from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.harbor.score_plot import plot_scores
from atoll.guidance_ttt.harbor.training_plot import metrics_line, plot_training
from atoll.guidance_ttt.services.training_barrier import TINKER_MODE
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.run_report import RunReport, read_report

STEPS_FILE = "steps.jsonl"
PLOT_FILE = "scores.png"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
TRAINING_PLOT_FILE = "training.png"


def write_outputs(
    config: GuidanceConfig, task: Task, logs_dir: Path, context: AgentContext
) -> RunReport:
    """Write the step lines, plot(s) and run summary into `logs_dir` and fill `context`."""
    report = read_report(config.state_dir)
    lines = "".join(
        json.dumps({**row.to_json(), "training_mode": report.training}, sort_keys=True) + "\n"
        for row in report.rows
    )
    atomic_write_bytes(logs_dir / STEPS_FILE, lines.encode("utf-8"))
    plot_scores(
        report.rows,
        logs_dir / PLOT_FILE,
        score_label=task.contract.raw_score_label,
        title=f"Guidance-TTT run {report.run_id} ({report.training})",
    )
    if report.training == TINKER_MODE:
        write_training_outputs(report, logs_dir, score_label=task.contract.raw_score_label)
    summary = {
        **report.to_json(),
        "state_dir": str(config.state_dir),
        "executor": {
            "preset": config.executor_preset,
            "base_url": config.executor_base_url,
            "model": config.executor_model,
        },
        "score_direction": task.contract.score_direction.value,
        "raw_score_label": task.contract.raw_score_label,
        "scorer": task.contract.scorer,
        # Which judge scored (also in `identity`); null for a scorer that is no judge, or
        # for a state saved before judges were recorded and never resumed since.
        "judge": report.identity.get(resume.JUDGE),
    }
    atomic_write_json(logs_dir / RUN_FILE, summary)
    fill_context(context, report)
    return report


def write_training_outputs(report: RunReport, logs_dir: Path, *, score_label: str) -> None:
    """A Tinker run's per-step update metrics (`metrics.jsonl`) and their plot (`training.png`)."""
    lines = "".join(json.dumps(metrics_line(row), sort_keys=True) + "\n" for row in report.rows)
    atomic_write_bytes(logs_dir / METRICS_FILE, lines.encode("utf-8"))
    plot_training(
        report.rows,
        logs_dir / TRAINING_PLOT_FILE,
        score_label=score_label,
        title=f"Guidance-TTT run {report.run_id}: Tinker updates",
    )


def fill_context(context: AgentContext, report: RunReport) -> None:
    """Harbor's view of the run: tokens, receipts, steps, seed and best scores, training mode."""
    context.n_output_tokens = report.guidance_tokens + report.executor_tokens
    best = report.best
    context.metadata = {
        **(context.metadata or {}),
        "run_id": report.run_id,
        "reef_scenario": report.scenario,
        "training": report.training,
        "steps": len(report.rows),
        "best_raw_score": None if best is None else best.raw_score,
        "seed_raw_score": None if report.seed is None else report.seed.raw_score,
        "reef_receipts": report.receipts,
        "guidance_completion_tokens": report.guidance_tokens,
        "executor_completion_tokens": report.executor_tokens,
    }
