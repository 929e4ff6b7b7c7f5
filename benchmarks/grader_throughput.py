"""What the checker's isolation costs per instance: the grader vs a plain subprocess loop.

A trivial submission (read the instance, print a constant answer) is graded on
N instances of a small task. Each instance is done twice, back to back, so both
see the same machine: once by the grader (its own unprivileged uid, session,
rlimits, wall clock, capped output, fresh network namespace where it may make
one, the kill-and-sweep of that uid and its files afterwards, then parsing,
validation and scoring) and once by a plain `subprocess.run` of the same
`python3 -I` program followed by the same parsing, validation and scoring.
The per-instance difference is the isolation's cost. Target: at most 15 ms
(median) on 2 cores. The one-off self-checks of a whole grading are shown
apart. Needs root (the grader switches uid).

    sudo uv run python benchmarks/grader_throughput.py [--instances 200]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from atoll.checker import Contract, Example, grade
from atoll.checker import grader as g

TARGET_MS = 15.0

GENERATOR = """import random

def generate(seed):
    rng = random.Random(seed)
    return [{"case": i, "values": [rng.randint(0, 99) for _ in range(20)]} for i in range(12)]
"""
SCORER = """def score(instance, output):
    if not isinstance(output, dict) or not isinstance(output.get("pick"), int) or isinstance(output["pick"], bool):
        return 0.0
    if not 0 <= output["pick"] < len(instance["values"]):
        return 0.0
    return instance["values"][output["pick"]] / 100
"""
FEASIBILITY = """def is_feasible(instance, output):
    pick = output.get("pick") if isinstance(output, dict) else None
    return isinstance(pick, int) and not isinstance(pick, bool) and 0 <= pick < len(instance["values"])
"""
SUBMISSION = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'pick': 0}))\n"


def _task(root: Path) -> Path:
    tests = root / "tests"
    tests.mkdir(parents=True)
    (tests / "generator.py").write_text(GENERATOR)
    (tests / "scorer.py").write_text(SCORER)
    (tests / "feasibility.py").write_text(FEASIBILITY)
    instance = {"case": 0, "values": [0, 50]}
    contract = Contract(
        seed=1,
        check_seeds=(1, 2, 3),
        examples=(
            Example("zero", instance, {"pick": 0}, True, 0.0),
            Example("half", instance, {"pick": 1}, True, 0.5),
            Example("outside", instance, {"pick": 2}, False, 0.0),
        ),
    )
    (tests / "contract.json").write_text(json.dumps(contract.to_json()))
    return tests


def _plain(python: str, program: Path, code: g.TaskCode, instance: dict) -> float:
    done = subprocess.run(
        [python, "-I", str(program)],
        input=g.canonical_json(instance) + b"\n",
        capture_output=True,
        timeout=10,
    )
    output, _ = g.parse_output(done.stdout)
    feasible, score = g._judge(code, instance, output, "plain")
    return score if feasible else 0.0


def _pct(samples: list[float], q: float) -> float:
    return sorted(samples)[min(len(samples) - 1, int(q * len(samples)))]


def main(instances: int = typer.Option(200, help="Instances graded by each way.")) -> None:
    console = Console()
    if os.geteuid() != 0:
        console.print("[red]the grader switches uid: run this as root[/red]")
        raise typer.Exit(2)
    root = Path(tempfile.mkdtemp(prefix="atoll-grader-bench-"))
    try:
        tests = _task(root)
        program = root / "solution.py"
        program.write_text(SUBMISSION)
        contract = g.load_contract(tests)
        code = g.load_task_code(tests)
        pool = code.generate(contract.seed)
        submission = g.read_submission(program, contract.limits.source_bytes)

        rows: dict[str, list[float]] = {"plain": [], "grader": [], "grader, no netns": []}
        with (
            g.Sandbox(submission, contract.limits) as sandbox,
            g.Sandbox(submission, contract.limits) as no_netns,
        ):
            no_netns.network_namespace = False
            python = sandbox.python or "python3"
            for index in range(instances + 5):
                instance = pool[index % len(pool)]
                timings = []
                for way in rows:
                    start = time.perf_counter()
                    if way == "plain":
                        _plain(python, program, code, instance)
                    else:
                        box = sandbox if way == "grader" else no_netns
                        g._grade_case(code, box, index, instance)
                    timings.append((time.perf_counter() - start) * 1000)
                if index >= 5:  # the first few warm caches
                    for name, ms in zip(rows, timings, strict=True):
                        rows[name].append(ms)
            netns = sandbox.network_namespace

        whole = []
        for _ in range(3):
            start = time.perf_counter()
            report = grade(tests, program)
            whole.append((time.perf_counter() - start) * 1000)
        self_checks = []
        for _ in range(3):
            start = time.perf_counter()
            g.self_check(tests).require()
            self_checks.append((time.perf_counter() - start) * 1000)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    table = Table(title=f"Grading a trivial submission: {instances} instances each, interleaved")
    for column in ("way", "median ms", "p90 ms", "instances/s", "isolation cost (median of pairs)"):
        table.add_column(column, justify="right" if column != "way" else "left")
    plain = rows["plain"]
    for name, samples in rows.items():
        label = {
            "plain": "plain subprocess.run + same scoring",
            "grader": f"grader ({'fresh network namespace' if netns else 'no netns available'})",
            "grader, no netns": "grader, without a network namespace (as in a container)",
        }[name]
        cost = (
            "-"
            if name == "plain"
            else f"{statistics.median([a - b for a, b in zip(samples, plain, strict=True)]):.2f} ms"
        )
        table.add_row(
            label,
            f"{statistics.median(samples):.2f}",
            f"{_pct(samples, 0.9):.2f}",
            f"{1000 / statistics.median(samples):.1f}",
            cost,
        )
    console.print(table)
    console.print(
        f"whole grade() of {len(report.cases)} instances, self-checks included: "
        f"median {statistics.median(whole):.0f} ms; self-checks alone: "
        f"median {statistics.median(self_checks):.0f} ms"
    )
    worst = max(
        statistics.median([a - b for a, b in zip(rows[n], plain, strict=True)])
        for n in ("grader", "grader, no netns")
    )
    verdict = "[green]met[/green]" if worst <= TARGET_MS else "[red]missed[/red]"
    console.print(f"target: isolation <= {TARGET_MS:.0f} ms per instance (median): {verdict}")


if __name__ == "__main__":
    typer.run(main)
