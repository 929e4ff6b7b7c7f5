"""Where a fast program's time goes, case by case: the judge's fixed cost per case, before and after.

One fast program (the shelf packer, about a millisecond of CPU a case) on
problem 0's 70 cases, one case after the other, so that each component is
measured alone:

  - plain: the program as a plain subprocess (what the sequential pipeline pays);
  - the sandboxed run two ways, in one invocation: a fresh bubblewrap box per
    case (how the judge ran each case before) and a run in a sandbox session
    (how it does now), each split into the per-run cgroup's creation, the
    process's start to its exit (box, program, teardown), the cgroup's
    counters and removal, and the rest (stdin memfd, argv, supervision);
  - the checker (atoll's own, in Python);
  - the engine's own bookkeeping per case (its wall time with one worker,
    less the runs and checks);
  - an HTTP round trip to the judge's server on a kept-alive connection,
    with its listening socket made the old way (Nagle's algorithm left on,
    so each answer waits for the client's delayed ACK) and the new way.

    uv run python benchmarks/judge_case_cost.py [--repeats 3]
"""

from __future__ import annotations

import dataclasses
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import typer
import uvicorn
from rich.console import Console
from rich.table import Table

from atoll.core.sandbox import Mount, SandboxSpec, bwrap_run, cgroups, get_backend
from atoll.judge import read_deadline
from atoll.judge.compiler import FLAGS
from atoll.judge.embedded import JudgeSetup, tcp_listener
from atoll.judge.engine import ENV, PROGRAM, PROGRAM_BOX, PROGRAM_SLOTS, Engine, run_limits
from atoll.judge.problems import load_problems

PROGRAM_SOURCE = Path(__file__).resolve().parents[1] / "tests" / "judge" / "programs" / "shelf.cpp"
console = Console(width=120)


class Timings:
    """Wall seconds of named steps, gathered by wrapping the functions that do them."""

    def __init__(self) -> None:
        self.seen: dict[str, list[float]] = {}

    def wrap(self, owner: Any, name: str, label: str) -> Callable[[], None]:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seen.setdefault(label, []).append(time.perf_counter() - started)

        setattr(owner, name, timed)
        return lambda: setattr(owner, name, original)

    def median_ms(self, label: str) -> float:
        return statistics.median(self.seen[label]) * 1e3


def sandboxed(run_case: Callable[[int], object], cases: int, repeats: int) -> dict[str, float]:
    """Per-case medians (ms) of one way of running the program, split into its steps."""
    timings = Timings()
    undo = [
        timings.wrap(cgroups.RunCgroup, "create", "cgroup create"),
        timings.wrap(bwrap_run, "supervise", "start to exit"),
        timings.wrap(cgroups.RunCgroup, "remove", "cgroup remove"),
        timings.wrap(bwrap_run, "_run_owning_pipes", "whole run"),
    ]
    try:
        for _ in range(repeats):
            for index in range(cases):
                run_case(index)
    finally:
        for restore in undo:
            restore()
    steps = {label: timings.median_ms(label) for label in timings.seen}
    steps["rest"] = steps["whole run"] - sum(
        steps[k] for k in ("cgroup create", "start to exit", "cgroup remove")
    )
    return steps


def plain_and_check(binary: Path, repeats: int) -> tuple[float, float]:
    problem = load_problems()["0"]
    runs, checks = [], []
    for _ in range(repeats):
        for index in range(len(problem.cases)):
            data = problem.case_input(index)
            started = time.perf_counter()
            out = subprocess.run([str(binary)], input=data, capture_output=True, check=True)
            runs.append(time.perf_counter() - started)
            started = time.perf_counter()
            problem.check(index, out.stdout)
            checks.append(time.perf_counter() - started)
    return statistics.median(runs) * 1e3, statistics.median(checks) * 1e3


def engine_per_case(state: Path, source: bytes, repeats: int) -> dict[str, float]:
    """The engine with one worker: wall per case, and what its runs and checks took of it."""
    engine = Engine(load_problems(), state, workers=1)
    timings = Timings()
    try:
        engine.judge("0", source)  # compiled, sessions open
        undo = [
            timings.wrap(bwrap_run, "_run_owning_pipes", "run"),
            timings.wrap(type(engine.problems["0"]), "check", "check"),
        ]
        walls = []
        try:
            for _ in range(repeats):
                started = time.perf_counter()
                engine.judge("0", source)
                walls.append(time.perf_counter() - started)
        finally:
            for restore in undo:
                restore()
    finally:
        engine.close()
    per_case = statistics.median(walls) / 70 * 1e3
    runs = sum(timings.seen["run"]) / repeats / 70 * 1e3
    checks = sum(timings.seen["check"]) / repeats / 70 * 1e3
    return {"wall": per_case, "bookkeeping": per_case - runs - checks}


@contextmanager
def judge_server(state: Path, listener: socket.socket) -> Iterator[str]:
    """The judge's HTTP app served on `listener`, as `atoll judge serve` and the embedded judge do."""
    from atoll.judge.server import create_app

    service = JudgeSetup(state_dir=state).service(state / "bench.sqlite")
    service.start()
    config = read_deadline.config(create_app(service, embedded=True), 30, "warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        service.close()


def http_round_trip(state: Path, listener: socket.socket, source: bytes) -> dict[str, float]:
    """Median ms of a POST /submit and a GET /result of a final result, on one connection."""
    listener.bind(("127.0.0.1", 0))
    posts, gets = [], []
    with judge_server(state, listener) as url, httpx.Client(base_url=url, timeout=60) as http:
        for i in range(10):
            files = {"code": ("solution.cpp", source + f"\n// {i}\n".encode(), "text/x-c++src")}
            started = time.perf_counter()
            sid = http.post("/submit", data={"pid": "0", "lang": "cpp"}, files=files).json()["sid"]
            posts.append(time.perf_counter() - started)
            while http.get(f"/result/{sid}").json().get("status") == "queued":
                time.sleep(0.01)
            for _ in range(3):
                started = time.perf_counter()
                http.get(f"/result/{sid}")
                gets.append(time.perf_counter() - started)
    return {"submit": statistics.median(posts) * 1e3, "result": statistics.median(gets) * 1e3}


def main(repeats: int = typer.Option(3, min=1, help="Passes over the 70 cases.")) -> None:
    load = os.getloadavg()[0]
    problem = load_problems()["0"]
    source = PROGRAM_SOURCE.read_bytes()
    with tempfile.TemporaryDirectory(prefix="judge-case-cost-") as tmp:
        root = Path(tmp)
        binary_dir = root / "bin"
        binary_dir.mkdir()
        binary_dir.chmod(0o755)
        binary = binary_dir / "solution"
        subprocess.run(["g++", *FLAGS, str(PROGRAM_SOURCE), "-o", str(binary)], check=True)
        plain, check = plain_and_check(binary, repeats)
        backend = get_backend("bwrap")
        fresh_spec = SandboxSpec(
            mounts=(Mount(binary_dir, "/judge"),), workdir="/tmp", env=ENV, stdin_seekable=True
        )

        def fresh(index: int) -> object:
            limits = run_limits(problem.cases[index].limits)
            spec = dataclasses.replace(fresh_spec, limits=limits)
            return backend.run([PROGRAM], spec, problem.case_input(index))

        with backend.session(PROGRAM_BOX, PROGRAM_SLOTS) as box:

            def session(index: int) -> object:
                return box.run(
                    [PROGRAM],
                    run_limits(problem.cases[index].limits),
                    problem.case_input(index),
                    mounts=(Mount(binary_dir, "/judge"),),
                    stdin_seekable=True,
                )

            before = sandboxed(fresh, len(problem.cases), repeats)
            after = sandboxed(session, len(problem.cases), repeats)
        engine = engine_per_case(root / "state", source, repeats)
        old_socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        old_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        http_before = http_round_trip(root / "state", old_socket, source)
        http_after = http_round_trip(root / "state", tcp_listener(), source)
    render(plain, check, before, after, engine, http_before, http_after)
    console.print(
        f"load average (1 min) at start {load:.1f}, at end {os.getloadavg()[0]:.1f}; "
        f"{repeats} passes over 70 cases, one case at a time"
    )


def render(
    plain: float,
    check: float,
    before: dict[str, float],
    after: dict[str, float],
    engine: dict[str, float],
    http_before: dict[str, float],
    http_after: dict[str, float],
) -> None:
    table = Table(title="A fast program's cost per case, ms (medians; one case at a time)")
    for column in ("component", "fresh box per case (before)", "sandbox session (after)"):
        table.add_column(column, justify="left" if column == "component" else "right")
    table.add_row("the program as a plain subprocess (floor)", f"{plain:.2f}", f"{plain:.2f}")
    for label, what in (
        ("cgroup create", "per-run cgroup: create (session: the next run's)"),
        ("start to exit", "start to exit: box (or launcher), program, teardown"),
        ("cgroup remove", "per-run cgroup: counters, kill, remove"),
        ("rest", "the rest: stdin memfd, argv, spawn, result"),
        ("whole run", "sandboxed run in all"),
    ):
        table.add_row(what, f"{before[label]:.2f}", f"{after[label]:.2f}")
    fixed_before, fixed_after = before["whole run"] - plain, after["whole run"] - plain
    table.add_row("sandbox's fixed cost (run - plain)", f"{fixed_before:.2f}", f"{fixed_after:.2f}")
    table.add_row("checker (atoll's, Python)", f"{check:.2f}", f"{check:.2f}")
    table.add_row("engine bookkeeping (now)", "", f"{engine['bookkeeping']:.2f}")
    table.add_row("engine wall per case, one worker (now)", "", f"{engine['wall']:.2f}")
    console.print(table)
    web = Table(title="HTTP to the judge, ms per request on a kept-alive connection (medians)")
    for column in ("request", "Nagle left on (before)", "TCP_NODELAY (after)"):
        web.add_column(column, justify="left" if column == "request" else "right")
    web.add_row("POST /submit", f"{http_before['submit']:.2f}", f"{http_after['submit']:.2f}")
    web.add_row(
        "GET /result (final)", f"{http_before['result']:.2f}", f"{http_after['result']:.2f}"
    )
    console.print(web)


if __name__ == "__main__":
    typer.run(main)
