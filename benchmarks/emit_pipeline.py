"""Accepted tasks per hour of `atoll emit frontiersmith` with an instant scripted model.

The model is the test suite's scripted OpenAI-compatible server on loopback
(answers at once, every candidate acceptable), so what is measured is the
pipeline: the command's start-up, the ledger and receipts, the sandboxed
construction checks, the staging and final bundles, the fresh Harbor trials
on atoll-local (no-op, baseline, three samples, the repeated reference),
the journal and the report. One collection runs per `--workers` value, in
one process of this script, each in its own directory.

Columns: wall time, how busy the machine's CPUs were during the run
(/proc/stat), accepted tasks per hour, and per accepted task
in seconds of work: the model's latency, the submitted programs' own run
time, the trials' remaining time (Harbor's box and agent phase, the grader's
self-checks), the pipeline's own time (every other stage, start-up and the
report), and the overhead: everything but model latency and program run time.

    uv run python benchmarks/emit_pipeline.py [--seeds 6] [--workers 1,2,4] [--latency 0]
"""

from __future__ import annotations

import json
import os
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


def cpu_times() -> tuple[int, int]:
    """(all, idle) jiffies of the machine's CPUs, from /proc/stat.

    Machine-wide on purpose: sandboxed programs are not this process's
    waited-for children, so its rusage would miss them; the figure includes
    whatever else the machine runs, which the load average printed says.
    """
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(fields), fields[3] + fields[4]  # idle + iowait


def waited_on_model(receipts: list[Any]) -> float:
    """Wall time the seeds spent waiting on the model: per seed, the union of its requests' spans."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for r in receipts:
        if r.settled_at is not None and r.latency_s:
            seed = r.label.split(":", 1)[-1]
            spans.setdefault(seed, []).append((r.settled_at - r.latency_s, r.settled_at))
    total = 0.0
    for intervals in spans.values():
        end = float("-inf")
        for start, stop in sorted(intervals):
            if stop > end:
                total += stop - max(start, end)
                end = stop
    return total


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
        before = cpu_times()
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=home)
        wall = time.perf_counter() - started
        after = cpu_times()
    busy = 1 - (after[1] - before[1]) / max(1, after[0] - before[0])
    if done.returncode != 0:
        raise RuntimeError(f"workers={workers}: exit {done.returncode}: {done.stderr[-2000:]}")
    summary = json.loads((out / "run.json").read_text())
    accepted = summary["totals"]["accepted"]
    (run_dir,) = (out / "runs").iterdir()
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        receipts = ledger.receipts()
        trials = ledger.work()
    model_s = sum(r.latency_s or 0.0 for r in receipts)
    model_waited = waited_on_model(receipts)
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
    in_stages = 0.0
    for outcome in summary["accepted"]:
        for stage, seconds in outcome["tally"]["stage_seconds"].items():
            stages.setdefault(stage, []).append(seconds)
            if stage not in ("execution", "rollout"):
                in_stages += seconds
    startup, report = first - started_at, stop - last_seed
    n = accepted or 1
    return {
        "workers": workers,
        "accepted": accepted,
        "wall": wall,
        "cpu_busy": busy,
        "per_hour": accepted / wall * 3600 if wall else 0.0,
        "model": model_s / n,
        "program": program_s / n,
        "harbor": (trial_s - program_s) / n,
        # stages outside the trials, less the time they waited on the model, plus fixed costs
        "pipeline": (in_stages - model_waited + startup + report) / n,
        "startup": startup,
        "report": report,
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
        "workers", "accepted", "wall s", "CPU busy", "tasks/hour", "speed-up",
        "model s/task", "program s/task", "Harbor+grader s/task", "pipeline s/task",
        "overhead s/task", "start-up s", "report s",
    ):  # fmt: skip
        table.add_column(column, justify="right")
    base = rows[0]["per_hour"]
    for row in rows:
        table.add_row(
            str(row["workers"]),
            str(row["accepted"]),
            f"{row['wall']:.1f}",
            f"{row['cpu_busy']:.0%}",
            f"{row['per_hour']:.0f}",
            f"{row['per_hour'] / base:.2f}x",
            f"{row['model']:.3f}",
            f"{row['program']:.2f}",
            f"{row['harbor']:.2f}",
            f"{row['pipeline']:.2f}",
            f"{row['harbor'] + row['pipeline']:.2f}",
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
        "Per accepted task, in seconds of work (summed, so overlapping work is counted in full): "
        "model = the model's latency; program = the submitted programs' own run time (graded "
        "cases); Harbor+grader = trial time less program time (the box, the agent phase, the "
        "grader's self-checks); pipeline = every other stage's time less the time it waited on "
        "the model, "
        "plus start-up and report; overhead = Harbor+grader + pipeline, i.e. everything but "
        "model latency and program run time. CPU busy = the machine's CPUs, busy share "
        "during the run (everything the machine ran)."
    )


if __name__ == "__main__":
    app()
