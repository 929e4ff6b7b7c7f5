"""Embedded judge throughput against the plain sequential pipeline, measured in one run.

For two programs (a fast shelf packer, and a search-style packer that spends
about 0.3 s of CPU per case), on problem 0's 70 cases:

  (a) the embedded judge end to end over HTTP (submit, compile, sandboxed
      parallel runs, checks, poll the result), each repetition a new source so
      that it compiles, on a judge that has judged submissions before (its
      sandbox sessions open, the inputs parsed, as (b) has them parsed, and the
      headers the program starts with precompiled, as for an agent's every
      submission after its second);
  (b) the plain sequential pipeline: g++ with the same flags, then each case
      run with a plain subprocess one after the other, and checked;
  (c) a resubmission of the source just judged (the compile is cached).

Also reported: what the compile costs, and the checker's cost per case beside
the time of running that case. Targets (2 cores): (a) <= 0.55 x (b) for the
search-style program (two workers make 0.5 x the floor), (a) <= 1.0 x (b) for
the fast one; (c) skips the compile; a check costs well under a run.

Then the same 70 cases as a checker-judged problem in a FrontierCS checkout's
layout, where a compiled checker runs once per case in its own sandbox (our
own plain C++ checker of problem 0 below, or with `--frontiercs DIR` the
checkout's real `chk.cc` and testlib), judged by the engine in-process:

  (d) the first submission on a cold state directory (the checker compiles);
  (e) a second submission of another program (the checker is cached);
  (f) the plain sequential pipeline: g++ the program, then for each case run
      it and run the (already built) checker as plain subprocesses.

    uv run python benchmarks/judge_throughput.py [--repeats 3] [--workers N] [--frontiercs DIR]
        [--only shelf|search]

Before and after a change, in one run: `--baseline DIR` names a source tree of
another commit (`git archive BASE | tar -x -C DIR`); every repetition then
measures that tree's judge and this one's, one after the other (each in a
child process whose import path puts its tree's atoll-core and judge first),
so that both meet the same load, and a last table sets them side by side.
"""

from __future__ import annotations

import json
import os
import shutil
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

from atoll.judge.checkout import find_checkout, load_checkout_problem
from atoll.judge.client import JudgeClient, Scored
from atoll.judge.compiler import FLAGS
from atoll.judge.embedded import EmbeddedJudge, JudgeSetup
from atoll.judge.engine import Engine
from atoll.judge.problems import BUILTIN_PROBLEMS, Problem, load_problems
from atoll.judge.testlib_message import ratios_from_testlib_message

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


def headers_of(source: bytes, i: int) -> bytes:
    """A program that includes what `source` starts by including, and prints nothing."""
    lines = [line for line in source.splitlines() if line.startswith(b"#include")]
    return b"\n".join(lines) + f"\nint main() {{ return {i}; }}\n".encode()


def idle(judge: EmbeddedJudge | Engine) -> None:
    """Until the judge's work between submissions is done (a judge from before that
    work, measured with --baseline, has none to wait for)."""
    wait_idle = getattr(judge, "wait_idle", None)
    if wait_idle is not None and not wait_idle(10.0):
        raise SystemExit("the judge was still busy 10 s after its last verdict")


def seconds(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}"


# Our own checker of problem 0 in testlib's conventions (no testlib): plain reads,
# not the exact token rules of atoll's Python checker; here only its cost matters.
POLYOMINO_CHECKER = r"""
#include <cstdio>
#include <unordered_set>
#include <vector>
struct CellHash { size_t operator()(const std::pair<long long, long long>& p) const {
    return std::hash<long long>()(p.first * 1000003LL) ^ std::hash<long long>()(p.second); } };
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "r"); FILE* out = fopen(argv[2], "r");
    int n; if (!in || fscanf(in, "%d", &n) != 1) { fprintf(stderr, "FAIL input\n"); return 3; }
    std::vector<std::vector<std::pair<long long, long long>>> piece(n); long long cells = 0;
    for (auto& p : piece) { int k; fscanf(in, "%d", &k); p.resize(k); cells += k;
        for (auto& c : p) fscanf(in, "%lld %lld", &c.first, &c.second); }
    long long W, H;
    if (!out || fscanf(out, "%lld %lld", &W, &H) != 2 || W < 1 || H < 1) {
        fprintf(stderr, "wrong output format W H\n"); return 2; }
    std::unordered_set<std::pair<long long, long long>, CellHash> seen; seen.reserve(2 * cells);
    for (auto& p : piece) { long long X, Y; int R, F;
        if (fscanf(out, "%lld %lld %d %d", &X, &Y, &R, &F) != 4 || R < 0 || R > 3 || F < 0 || F > 1) {
            fprintf(stderr, "wrong output format placement\n"); return 2; }
        for (auto c : p) { long long x = F ? -c.first : c.first, y = c.second;
            for (int r = 0; r < R; r++) { long long t = x; x = y; y = -t; }
            x += X; y += Y;
            if (x < 0 || y < 0 || x >= W || y >= H || !seen.insert({x, y}).second) {
                fprintf(stderr, "wrong answer cell (%lld,%lld)\n", x, y); return 1; } } }
    double ratio = (double)cells / ((double)W * (double)H);
    fprintf(stderr, "points %.9f Ratio: %.9f\n", ratio, ratio); return 7;
}
"""


def checked_problem(root: Path, frontiercs: Path | None) -> Problem:
    """Problem 0's 70 cases judged by a compiled checker, in a checkout's layout."""
    if frontiercs is not None:
        return load_checkout_problem(find_checkout(frontiercs), "0")
    problem = root / "checkout" / "algorithmic" / "problems" / "0"
    (problem / "testdata").mkdir(parents=True)
    include = root / "checkout" / "algorithmic" / "judge" / "include"
    include.mkdir(parents=True)
    (include / "testlib.h").write_text("// not used by this checker\n")
    (problem / "chk.cc").write_text(POLYOMINO_CHECKER)
    (problem / "statement.txt").write_text("Polyomino Packing (benchmark copy)\n")
    (problem / "config.yaml").write_text(
        "type: default\nchecker: chk.cc\ntime: 2s\nmemory: 256m\n"
        "subtasks:\n  - score: 100\n    n_cases: 70\n"
    )
    for case in range(1, 71):
        shutil.copy(BUILTIN_PROBLEMS / "0" / "testdata" / f"{case}.in", problem / "testdata")
        (problem / "testdata" / f"{case}.ans").write_text("0\n")
    return load_checkout_problem(find_checkout(root / "checkout"), "0")


def sequential_checked(problem: Problem, source: bytes, checker: Path, work: Path) -> dict:
    """Compile the program, then run it and the prebuilt checker case after case."""
    src = work / "solution.cpp"
    src.write_bytes(source)
    started = time.perf_counter()
    subprocess.run(["g++", *FLAGS, str(src), "-o", str(work / "solution")], check=True)
    total = 0.0
    for case in problem.cases:
        out = subprocess.run(
            [str(work / "solution")], input=case.input.read_bytes(), capture_output=True
        )
        (work / "out.txt").write_bytes(out.stdout)
        assert case.answer is not None
        verdict = subprocess.run(
            [str(checker), str(case.input), str(work / "out.txt"), str(case.answer)],
            capture_output=True,
        )
        text = (verdict.stdout or verdict.stderr).decode(errors="replace")
        total += (
            ratios_from_testlib_message(text, verdict.returncode == 0)[0]
            if out.returncode == 0
            else 0.0
        )
    return {"wall": time.perf_counter() - started, "score": 100 * total / len(problem.cases)}


def measure_checked(
    repeats: int, workers: int | None, frontiercs: Path | None, programs: dict[str, str]
) -> dict[str, Any]:
    """(d), (e), (f) and the checker's compile, per program, `repeats` times."""
    found: dict[str, Any] = {}
    for label, name in programs.items():
        d, e, f, compiles, scores = [], [], [], [], ""
        for i in range(repeats):
            with tempfile.TemporaryDirectory(prefix="judge-bench-checked-") as tmp:
                root = Path(tmp)
                problem = checked_problem(root, frontiercs)
                engine = Engine({"0": problem}, root / "state", workers)
                try:
                    base = (PROGRAMS / name).read_bytes()
                    first_source = base + f"\n// first {time.time_ns()} {i}\n".encode()
                    t0 = time.perf_counter()
                    first = engine.judge("0", first_source)
                    d.append(time.perf_counter() - t0)
                    compiles.append(first["judge"]["checkerCompileSeconds"])
                    second_source = base + f"\n// second {time.time_ns()} {i}\n".encode()
                    idle(engine)  # a judge idle between submissions, as (a) finds it
                    t0 = time.perf_counter()
                    second = engine.judge("0", second_source)
                    e.append(time.perf_counter() - t0)
                    if not second["judge"]["checkerCached"]:
                        raise SystemExit("the second submission compiled the checker again")
                finally:
                    engine.close()
                checker = root / "chk"
                assert problem.tool is not None
                subprocess.run(
                    ["g++", str(problem.tool.source), *FLAGS, "-I"]
                    + [str(problem.tool.include_dir), "-o", str(checker)],
                    check=True,
                )
                plain = sequential_checked(problem, second_source, checker, root)
                f.append(plain["wall"])
                scores = f"{second['score']:.4f} / {plain['score']:.4f}"
        found[label] = {"d": d, "e": e, "f": f, "compiles": compiles, "scores": scores}
    return found


def checker_table(checked: dict[str, Any], title: str) -> Table:
    table = Table(title=title)
    for column in (
        "program",
        "(d) first, cold",
        "checker compile",
        "(e) next, cached",
        "(f) sequential",
        "e/f",
        "d - e",
        "score judge / seq",
    ):
        table.add_column(column, justify="right" if column != "program" else "left")
    for label, m in checked.items():
        table.add_row(
            label,
            seconds(m["d"]),
            seconds(m["compiles"]),
            seconds(m["e"]),
            seconds(m["f"]),
            f"{statistics.median(m['e']) / statistics.median(m['f']):.2f}",
            f"{statistics.median(m['d']) - statistics.median(m['e']):.2f}",
            m["scores"],
        )
    return table


def measure_http(repeats: int, workers: int | None, programs: dict[str, str]) -> dict[str, Any]:
    """(a), (b), (c), the compiles and each case's check and run time, per program."""
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        root = Path(tmp)
        setup = JudgeSetup(state_dir=root / "state", workers=workers)
        with EmbeddedJudge(setup) as judge, JudgeClient(judge.url, poll_interval=0.02) as client:
            # One submission first, untimed: (a) and (c) are then those of a judge in use, its
            # sandbox sessions open and the problem's inputs parsed, as (b) has them parsed.
            judged(client, (PROGRAMS / next(iter(programs.values()))).read_bytes() + b"\n// warm\n")
            for name in programs.values():
                # And two that start as the program does (and print nothing): as for an
                # agent's every submission after its second, the judge has precompiled the
                # headers the program starts with (see the judge's `precompiled`).
                for i in range(2):
                    judged(client, headers_of((PROGRAMS / name).read_bytes(), i))
            for label, name in programs.items():
                base = (PROGRAMS / name).read_bytes()
                m: dict[str, list[float]] = {
                    key: [] for key in ("a", "b", "c", "compile_judge", "compile_plain")
                }
                m.update(checks=[], runs=[])
                for i in range(repeats):
                    source = base + f"\n// benchmark {time.time_ns()} {i}\n".encode()
                    work = root / f"seq-{name}-{i}"
                    work.mkdir()
                    idle(judge)  # its refill after the last verdict, not timed with (b)
                    plain = sequential(source, work)
                    m["b"].append(plain["wall"])
                    m["compile_plain"].append(plain["compile"])
                    elapsed, first = judged(client, source)
                    m["a"].append(elapsed)
                    m["compile_judge"].append(first.result["judge"]["compileSeconds"])
                    again, second = judged(client, source)
                    m["c"].append(again)
                    if not second.result["judge"]["compileCached"]:
                        raise SystemExit("a resubmission was compiled again")
                    for case in first.result["cases"]:
                        m["checks"].append(case["checkTime"] / 1e9)
                        m["runs"].append(case["wallTime"] / 1e9)
                found[label] = m
    return found


def http_table(measured: dict[str, Any], title: str) -> Table:
    table = Table(title=title)
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
    for label, m in measured.items():
        table.add_row(
            label,
            seconds(m["a"]),
            seconds(m["b"]),
            seconds(m["c"]),
            f"{ratio(m, 'a', 'b'):.2f}",
            f"{ratio(m, 'c', 'a'):.2f}",
            f"{seconds(m['compile_judge'])} / {seconds(m['compile_plain'])}",
            f"{statistics.median(m['checks']) * 1e3:.2f} ms, {max(m['checks']) * 1e3:.2f} ms",
            f"{statistics.median(m['runs']) * 1e3:.1f} ms",
        )
    return table


def ratio(m: dict[str, list[float]], top: str, bottom: str) -> float:
    return statistics.median(m[top]) / statistics.median(m[bottom])


def verdicts(measured: dict[str, Any]) -> list[str]:
    lines = []
    for label, m in measured.items():
        target = 0.55 if label.startswith("search") else 1.0
        a_b = ratio(m, "a", "b")
        best = min(m["a"]) / min(m["b"])
        check = statistics.median(m["checks"]) / statistics.median(m["runs"])
        lines.append(
            f"{label}: judge/sequential = {a_b:.2f} median, {best:.2f} best of {len(m['a'])} "
            f"({'meets' if a_b <= target else 'MISSES'} the target <= {target:.2f}); "
            f"check/run per case = {check:.3f}"
        )
    return lines


def selected(only: list[str]) -> dict[str, str]:
    """The programs of CASES named (by file stem) in `only`; all of them when it is empty."""
    stems = {Path(name).stem: label for label, name in CASES.items()}
    unknown = [stem for stem in only if stem not in stems]
    if unknown:
        raise typer.BadParameter(f"no program {unknown[0]!r}: choose from {', '.join(stems)}")
    return {label: name for label, name in CASES.items() if not only or Path(name).stem in only}


def measure(
    repeats: int, workers: int | None, frontiercs: Path | None, programs: dict[str, str]
) -> dict[str, Any]:
    load = os.getloadavg()[0]
    http = measure_http(repeats, workers, programs)
    checked = measure_checked(repeats, workers, frontiercs, programs)
    return {"http": http, "checked": checked, "load": [load, os.getloadavg()[0]]}


def measured_by(
    tree: Path | None, workers: int | None, frontiercs: Path | None, only: list[str]
) -> dict[str, Any]:
    """One repetition in a child process, with `tree`'s judge (None: this one) on its path."""
    env = dict(os.environ)
    if tree is not None:
        sources = [
            tree / "plugins" / "atoll-core" / "src",
            tree / "verifiers" / "frontiercs-judge" / "src",
        ]
        env["PYTHONPATH"] = os.pathsep.join(map(str, sources))
    argv = [sys.executable, __file__, "--repeats", "1", "--json"]
    argv += ["--workers", str(workers)] if workers else []
    argv += ["--frontiercs", str(frontiercs)] if frontiercs else []
    argv += [word for stem in only for word in ("--only", stem)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"a measuring child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Repetitions measured apart, as one measurement of all of them."""
    out: dict[str, Any] = {
        "http": {},
        "checked": {},
        "load": [runs[0]["load"][0], runs[-1]["load"][1]],
    }
    for run in runs:
        for part in ("http", "checked"):
            for label, m in run[part].items():
                into = out[part].setdefault(label, {})
                for key, value in m.items():
                    if isinstance(value, list):
                        into.setdefault(key, []).extend(value)
                    else:
                        into[key] = value
    return out


def comparison(before: dict[str, Any], after: dict[str, Any]) -> Table:
    table = Table(title="Before and after, the same repetitions interleaved (medians, seconds)")
    for column in ("program", "measure", "before", "after", "after/before"):
        table.add_column(column, justify="left" if column in ("program", "measure") else "right")
    for label in before["http"]:
        b, a = before["http"][label], after["http"][label]
        for key, what in (("a", "(a) judge e2e"), ("c", "(c) resubmit"), ("b", "(b) sequential")):
            old, new = statistics.median(b[key]), statistics.median(a[key])
            table.add_row(label, what, f"{old:.3f}", f"{new:.3f}", f"{new / old:.2f}")
        table.add_row(label, "a/b", f"{ratio(b, 'a', 'b'):.2f}", f"{ratio(a, 'a', 'b'):.2f}", "")
    for label in before["checked"]:
        b, a = before["checked"][label], after["checked"][label]
        old, new = statistics.median(b["e"]), statistics.median(a["e"])
        table.add_row(label, "(e) checked, cached", f"{old:.3f}", f"{new:.3f}", f"{new / old:.2f}")
    return table


@app.command()
def main(
    repeats: int = typer.Option(3, min=1, help="Repetitions; medians are reported."),
    workers: int | None = typer.Option(None, help="Judge workers (default: every core)."),
    frontiercs: Path | None = typer.Option(
        None, help="A FrontierCS checkout: time its problem 0 chk.cc instead of ours."
    ),
    baseline: Path | None = typer.Option(
        None, help="Another commit's source tree: measure it too, interleaved, and compare."
    ),
    only: list[str] = typer.Option(
        [], "--only", help="Measure only this program (shelf, search); repeat for more."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the raw measurements as JSON."),
) -> None:
    programs = selected(only)
    if as_json:
        print(json.dumps(measure(repeats, workers, frontiercs, programs)))
        return
    console.print(f"cores: {os.cpu_count()}, judge workers: {workers or os.cpu_count()}")
    if baseline is None:
        after = measure(repeats, workers, frontiercs, programs)
        report(after, "")
    else:
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for i in range(repeats):
            console.print(f"repetition {i + 1} of {repeats}: {baseline}, then this tree")
            runs["before"].append(measured_by(baseline, workers, frontiercs, only))
            runs["after"].append(measured_by(None, workers, frontiercs, only))
        before, after = merged(runs["before"]), merged(runs["after"])
        report(before, f"before ({baseline})")
        report(after, "after (this tree)")
        console.print(comparison(before, after))
    checker = "the checkout's chk.cc" if frontiercs else "our plain C++ one"
    console.print(
        f"checker-judged: (d) includes the checker's compile, (e) reuses it (checked); "
        f"checker: {checker}"
    )


def report(m: dict[str, Any], which: str) -> None:
    prefix = f"{which}: " if which else ""
    console.print(
        http_table(m["http"], f"{prefix}Problem 0, 70 cases: wall seconds (median of repeats)")
    )
    for line in verdicts(m["http"]):
        console.print(f"{prefix}{line}")
    console.print("resubmissions: compile cached in every repetition (checked)")
    title = "Problem 0 as a checker-judged problem (compiled checker per case)"
    console.print(checker_table(m["checked"], f"{prefix}{title}"))
    start, end = m["load"]
    console.print(
        f"{prefix}load average (1 min) at start {start:.1f}, at end {end:.1f}: other work on the "
        "machine takes cores from the parallel judge first; compare runs on an idle one"
    )


if __name__ == "__main__":
    app()
