"""What isolating one command costs: raw subprocess vs bubblewrap vs Docker.

Runs a trivial command (`/bin/true`) N times through each runner, one after
the other, and prints the median and 90th percentile wall time per command
and the overhead over a raw subprocess: a fresh bubblewrap box per run, a run
in a bubblewrap session (the box built once, each run in a private copy of
it: what the judge does per case), Docker. Target: the bubblewrap backend
within 20 ms of raw subprocess (median). Docker rows are skipped, with the
reason, when no engine answers.

    uv run python benchmarks/sandbox_overhead.py [--runs 200]
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import typer
from rich.console import Console
from rich.table import Table

from atoll.core.sandbox import SandboxError, SandboxSpec, get_backend

COMMAND = ["/bin/true"]
TARGET_MS = 20.0
BATCH = 70  # a judge runs about this many programs per submission, in parallel


def _time(runner: Callable[[], None], runs: int) -> list[float]:
    runner()  # warm caches (page cache, image lookups, connections)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        runner()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def _raw() -> None:
    subprocess.run(COMMAND, check=True)


def _bwrap() -> Callable[[], None]:
    backend = get_backend("bwrap")
    backend.check()
    spec = SandboxSpec()

    def run() -> None:
        result = backend.run(COMMAND, spec)
        if not result.ok:
            raise SandboxError(f"bwrap run failed: {result.status}")

    return run


def _bwrap_session() -> tuple[Callable[[], None], Callable[[], None]]:
    session = get_backend("bwrap").session(SandboxSpec())

    def run() -> None:
        result = session.run(COMMAND)
        if not result.ok:
            raise SandboxError(f"bwrap session run failed: {result.status}")

    return run, session.close


def _docker_run() -> Callable[[], None]:
    backend = get_backend("docker")
    backend.check()
    spec = SandboxSpec()

    def run() -> None:
        result = backend.run(COMMAND, spec)
        if not result.ok:
            raise SandboxError(f"docker run failed: {result.status}")

    return run


def _docker_exec() -> tuple[Callable[[], None], Callable[[], None]]:
    """`docker exec` of the command in one long-running container of the base image."""
    import docker

    from atoll.core.sandbox.docker_backend import DEFAULT_IMAGE, engine_url

    get_backend("docker").check()
    client = docker.DockerClient(base_url=engine_url(), version="auto")
    container = client.containers.run(
        DEFAULT_IMAGE,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        auto_remove=False,
        labels={"atoll.benchmark": "1"},
    )

    def run() -> None:
        code, _ = container.exec_run(COMMAND)
        if code != 0:
            raise SandboxError(f"docker exec failed with {code}")

    def close() -> None:
        container.remove(force=True)
        client.close()

    return run, close


def _batch(runner: Callable[[], None], threads: int, repeats: int = 5) -> float:
    """Median wall time (ms) of BATCH commands spread over `threads` threads."""
    times = []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(lambda _: runner(), range(BATCH)))
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(runs: int = typer.Option(200, help="Commands per runner.")) -> None:
    console = Console()
    rows: list[tuple[str, list[float] | str]] = [("raw subprocess", _time(_raw, runs))]
    rows.append(("bubblewrap (atoll sandbox)", _time(_bwrap(), runs)))
    run_in_session, close_session = _bwrap_session()
    try:
        rows.append(("bubblewrap session, run in a prepared box", _time(run_in_session, runs)))
    finally:
        close_session()
    try:
        rows.append(("docker, container per run (atoll sandbox)", _time(_docker_run(), runs)))
    except SandboxError as exc:
        rows.append(("docker, container per run (atoll sandbox)", f"skipped: {exc}"))
    try:
        run, close = _docker_exec()
        try:
            rows.append(("docker exec (running container)", _time(run, runs)))
        finally:
            close()
    except SandboxError as exc:
        rows.append(("docker exec (running container)", f"skipped: {exc}"))

    raw_median = statistics.median(rows[0][1])  # type: ignore[arg-type]
    table = Table(title=f"Per-command cost of `{' '.join(COMMAND)}`, {runs} runs each")
    for column in ("runner", "median ms", "p90 ms", "overhead vs raw (median)", "x raw"):
        table.add_column(column, justify="left" if column == "runner" else "right")
    for name, samples in rows:
        if isinstance(samples, str):
            table.add_row(name, samples, "", "", "")
            continue
        median = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        table.add_row(
            name,
            f"{median:.2f}",
            f"{p90:.2f}",
            f"{median - raw_median:+.2f} ms",
            f"{median / raw_median:.1f}",
        )
    console.print(table)
    batch = Table(title=f"A judge-sized batch: {BATCH} commands over 8 threads")
    batch.add_column("runner")
    batch.add_column("batch ms (median of 5)", justify="right")
    batch.add_column("ms per command", justify="right")
    for name, runner in (("raw subprocess", _raw), ("bubblewrap (atoll sandbox)", _bwrap())):
        total = _batch(runner, threads=8)
        batch.add_row(name, f"{total:.1f}", f"{total / BATCH:.2f}")
    console.print(batch)
    bwrap_overhead = statistics.median(rows[1][1]) - raw_median  # type: ignore[arg-type]
    verdict = "meets" if bwrap_overhead <= TARGET_MS else "MISSES"
    console.print(
        f"bubblewrap overhead {bwrap_overhead:.2f} ms {verdict} the {TARGET_MS:.0f} ms target"
    )


if __name__ == "__main__":
    typer.run(main)
