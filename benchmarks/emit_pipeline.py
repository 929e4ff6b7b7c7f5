"""Accepted tasks per hour of `atoll emit frontiersmith` with an instant scripted model.

The model is the test suite's scripted OpenAI-compatible server on loopback
(answers at once, every candidate acceptable), so what is measured is the
pipeline: the command's start-up, the ledger and receipts, the sandboxed
construction checks, the staging and final bundles, the fresh Harbor trials
on atoll-local (no-op, baseline, three samples, the repeated reference),
the journal and the report. One collection runs per `--workers` value, in
one process of this script, each in its own directory.

Columns: wall time, how busy the CPUs were (CPU time of the whole process
tree over wall time x CPUs), accepted tasks per hour, and per accepted task: the
model's latency (sum over receipts), the submitted programs' own run time
(sum of the graded cases' wall times in scores.json), the Harbor trials'
wall time (sum over worker receipts, programs included), and the
pipeline's own overhead: wall time minus model latency minus program run
time, divided by the accepted tasks (at --workers 1 nothing overlaps across
seeds, so this is the pipeline's own cost per task); the stage breakdown
says where it goes.

    uv run python benchmarks/emit_pipeline.py [--seeds 6] [--workers 1,2,4] [--latency 0]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.frontiersmith_model import KnapsackModel, seed_lines  # noqa: E402
from support.openai_server import ScriptedOpenAIServer  # noqa: E402

from atoll.core.ledger import Ledger  # noqa: E402

app = typer.Typer(add_completion=False)
console = Console(width=140)


def collect(workers: int, seeds: int, root: Path, latency: float) -> dict[str, Any]:
    """One collection of `seeds` seeds (all acceptable) at `workers`; its measurements."""
    home = root / f"workers-{workers}-latency-{latency:g}"
    home.mkdir()
    seed_file = home / "seeds.jsonl"
    seed_file.write_text(seed_lines([f"b{i}" for i in range(seeds)]))
    out = home / "out"
    with ScriptedOpenAIServer(KnapsackModel(latency_s=latency).script) as server:
        argv = [
            str(Path(sys.executable).parent / "atoll"), "emit", "frontiersmith",
            "--seeds", str(seed_file), "--target", str(seeds), "--budget", "100",
            "--model", "scripted", "--base-url", server.base_url,
            "--price-in", "1", "--price-out", "2", "--environment", "atoll-local",
            "--workers", str(workers), "--out", str(out),
        ]  # fmt: skip
        env = {**os.environ, "OPENAI_API_KEY": "benchmark", "XDG_STATE_HOME": str(home / "state")}
        started_at = time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=home)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"workers={workers}: exit {done.returncode}: {done.stderr[-2000:]}")
    summary = json.loads((out / "run.json").read_text())
    accepted = summary["totals"]["accepted"]
    (run_dir,) = (out / "runs").iterdir()
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        model_s = sum(r.latency_s or 0.0 for r in ledger.receipts())
        trials = ledger.work()
    trial_s = sum(w.seconds or 0.0 for w in trials)
    program_s = 0.0
    for work in trials:
        scores = Path(work.detail["trial_dir"]) / "verifier" / "scores.json"
        if scores.is_file():
            program_s += sum(c["wall_time"] for c in json.loads(scores.read_text())["cases"])
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    first = next(e["t"] for e in events if e["event"] == "start")
    last_seed = max(e["t"] for e in events if e["event"] == "seed")
    stop = next(e["t"] for e in events if e["event"] == "stop")
    stages: dict[str, list[float]] = {}
    for task in summary["accepted"]:
        for stage, seconds in task["tally"]["stage_seconds"].items():
            stages.setdefault(stage, []).append(seconds)
    return {
        "workers": workers,
        "accepted": accepted,
        "wall": wall,
        "cpu_busy": cpu / (wall * (os.cpu_count() or 1)),
        "per_hour": accepted / wall * 3600 if wall else 0.0,
        "model": model_s,
        "program": program_s,
        "trials": trial_s,
        "n_trials": len(trials),
        "overhead": (wall - model_s - program_s) / accepted if accepted else float("nan"),
        "startup": first - started_at,
        "report": stop - last_seed,
        "stages": {k: statistics.median(v) for k, v in stages.items()},
    }


@app.command()
def main(
    seeds: int = typer.Option(6, help="Seeds per collection (all are accepted)."),
    workers: str = typer.Option("1,2,4", help="Worker counts to compare, in one run."),
    latency: float = typer.Option(
        0.0, help="Seconds the scripted model takes per answer (0: instant, the target's setting)."
    ),
) -> None:
    counts = [int(w) for w in workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="atoll-emit-bench-") as tmp:
        rows = [collect(w, seeds, Path(tmp), latency) for w in counts]
    model = (
        "instant scripted model" if not latency else f"scripted model answering in {latency:g} s"
    )
    console.print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} after the runs")
    table = Table(title=f"atoll emit frontiersmith, {model}, {seeds} seeds, atoll-local")
    for column in (
        "workers", "accepted", "wall s", "CPU busy", "tasks/hour", "speed-up", "trials",
        "model s/task", "program s/task", "trial s/task", "overhead s/task",
        "start-up s", "report s",
    ):  # fmt: skip
        table.add_column(column, justify="right")
    base = rows[0]["per_hour"]
    for row in rows:
        n = row["accepted"] or 1
        table.add_row(
            str(row["workers"]),
            str(row["accepted"]),
            f"{row['wall']:.1f}",
            f"{row['cpu_busy']:.0%}",
            f"{row['per_hour']:.0f}",
            f"{row['per_hour'] / base:.2f}x",
            str(row["n_trials"]),
            f"{row['model'] / n:.3f}",
            f"{row['program'] / n:.3f}",
            f"{row['trials'] / n:.2f}",
            f"{row['overhead']:.2f}",
            f"{row['startup']:.2f}",
            f"{row['report']:.2f}",
        )
    console.print(table)
    stages = Table(title="median wall time per accepted task and stage (s)")
    names = list(rows[0]["stages"])
    stages.add_column("workers", justify="right")
    for name in names:
        stages.add_column(name, justify="right")
    for row in rows:
        stages.add_row(str(row["workers"]), *(f"{row['stages'].get(n, 0.0):.2f}" for n in names))
    console.print(stages)
    console.print(
        "overhead = (wall - model latency - program run time) / accepted task: the pipeline's own "
        "cost, Harbor and the grader's self-checks included; trial s = summed trial wall time "
        "(trials overlap); start-up = process start to the first seed; report = last seed to exit."
    )


if __name__ == "__main__":
    app()
