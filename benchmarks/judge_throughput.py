"""Embedded judge throughput against the plain sequential pipeline, measured in one run.

For two programs (a fast shelf packer, and a search-style packer that spends
about 0.3 s of CPU per case), on problem 0's 70 cases:

  (a) the embedded judge end to end over HTTP (submit, compile, sandboxed
      parallel runs, checks, poll the result), each repetition a new source so
      that it compiles;
  (b) the plain sequential pipeline: g++ with the same flags, then each case
      run with a plain subprocess one after the other, and checked;
  (c) a resubmission of the source just judged (the compile is cached).

Also reported: what the compile costs, and the checker's cost per case beside
the time of running that case. Targets (2 cores): (a) <= 0.6 x (b) for the
search-style program; (c) skips the compile; a check costs well under a run.

    uv run python benchmarks/judge_throughput.py [--repeats 3] [--workers N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from atoll.judge.client import JudgeClient, Scored
from atoll.judge.compiler import FLAGS
from atoll.judge.embedded import EmbeddedJudge, JudgeSetup
from atoll.judge.problems import load_problems

PROGRAMS = Path(__file__).resolve().parents[1] / "tests" / "judge" / "programs"
CASES = {"fast packer (shelf)": "shelf.cpp", "search-style (0.3 s CPU/case)": "search.cpp"}

app = typer.Typer(add_completion=False)
console = Console(width=120)


def sequential(source: bytes, work: Path) -> dict[str, float]:
    """Compile, then run and check every case one after the other with plain subprocess."""
    problem = load_problems()["0"]
    for index in range(len(problem.cases)):
        problem.prepared(index)  # parse inputs up front, as the judge has them cached
    src = work / "solution.cpp"
    src.write_bytes(source)
    started = time.perf_counter()
    subprocess.run(["g++", *FLAGS, str(src), "-o", str(work / "solution")], check=True)
    compiled = time.perf_counter()
    run_total = check_total = 0.0
    ratios = []
    for index in range(len(problem.cases)):
        data = problem.case_input(index)
        t0 = time.perf_counter()
        out = subprocess.run([str(work / "solution")], input=data, capture_output=True)
        t1 = time.perf_counter()
        result = problem.check(index, out.stdout) if out.returncode == 0 else None
        t2 = time.perf_counter()
        run_total += t1 - t0
        check_total += t2 - t1
        ratios.append(result.ratio if result is not None and result.ok else 0.0)
    finished = time.perf_counter()
    return {
        "wall": finished - started,
        "compile": compiled - started,
        "run_per_case": run_total / len(problem.cases),
        "check_per_case": check_total / len(problem.cases),
        "score": 100 * sum(ratios) / len(ratios),
    }


def judged(client: JudgeClient, source: bytes) -> tuple[float, Scored]:
    started = time.perf_counter()
    outcome = client.score(source, deadline_s=600)
    elapsed = time.perf_counter() - started
    if not isinstance(outcome, Scored):
        raise SystemExit(f"the judge refused the benchmark program: {outcome.reason}")
    return elapsed, outcome


def seconds(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}"


@app.command()
def main(
    repeats: int = typer.Option(3, min=1, help="Repetitions; medians are reported."),
    workers: int | None = typer.Option(None, help="Judge workers (default: every core)."),
) -> None:
    load = os.getloadavg()[0]
    console.print(f"cores: {os.cpu_count()}, judge workers: {workers or os.cpu_count()}")
    table = Table(title="Problem 0, 70 cases: wall seconds (median of repeats)")
    for column in (
        "program",
        "(a) judge e2e",
        "(b) sequential",
        "(c) resubmit",
        "a/b",
        "c/a",
        "compile judge / g++",
        "check/case (median, max)",
        "run/case (median)",
    ):
        table.add_column(column, justify="right" if column != "program" else "left")
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        root = Path(tmp)
        setup = JudgeSetup(state_dir=root / "state", workers=workers)
        with EmbeddedJudge(setup) as judge, JudgeClient(judge.url, poll_interval=0.02) as client:
            for label, name in CASES.items():
                base = (PROGRAMS / name).read_bytes()
                a, b, c, compile_judge, compile_plain = [], [], [], [], []
                checks, runs = [], []
                for i in range(repeats):
                    source = base + f"\n// benchmark {time.time_ns()} {i}\n".encode()
                    work = root / f"seq-{name}-{i}"
                    work.mkdir()
                    plain = sequential(source, work)
                    b.append(plain["wall"])
                    compile_plain.append(plain["compile"])
                    elapsed, first = judged(client, source)
                    a.append(elapsed)
                    compile_judge.append(first.result["judge"]["compileSeconds"])
                    again, second = judged(client, source)
                    c.append(again)
                    if not second.result["judge"]["compileCached"]:
                        raise SystemExit("a resubmission was compiled again")
                    for case in first.result["cases"]:
                        checks.append(case["checkTime"] / 1e9)
                        runs.append(case["wallTime"] / 1e9)
                ratio_ab = statistics.median(a) / statistics.median(b)
                ratio_ca = statistics.median(c) / statistics.median(a)
                table.add_row(
                    label,
                    seconds(a),
                    seconds(b),
                    seconds(c),
                    f"{ratio_ab:.2f}",
                    f"{ratio_ca:.2f}",
                    f"{seconds(compile_judge)} / {seconds(compile_plain)}",
                    f"{statistics.median(checks) * 1e3:.2f} ms, {max(checks) * 1e3:.2f} ms",
                    f"{statistics.median(runs) * 1e3:.1f} ms",
                )
                best_ab = min(a) / min(b)
                verdicts.append(
                    (label, ratio_ab, best_ab, statistics.median(checks), statistics.median(runs))
                )
    console.print(table)
    for label, ratio_ab, best_ab, check, run in verdicts:
        target = " (target <= 0.60)" if label.startswith("search") else ""
        console.print(
            f"{label}: judge/sequential = {ratio_ab:.2f} median, {best_ab:.2f} best of "
            f"{repeats}{target}; check/run per case = {check / run:.3f}"
        )
    console.print("resubmissions: compile cached in every repetition (checked)")
    console.print(
        f"load average (1 min) at start {load:.1f}, at end {os.getloadavg()[0]:.1f}: other work "
        "on the machine takes cores from the parallel judge first; compare runs on an idle one"
    )


if __name__ == "__main__":
    app()
