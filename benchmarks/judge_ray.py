"""Judge throughput on a local Ray cluster of 1, 2 and 3 judge nodes, against this machine's engine.

A fast program (the shelf packer, about a millisecond of CPU a case) on
problem 0's 70 cases, already compiled, so that what is measured is the
cost of getting each case judged: this machine's engine with one worker
(what one judge node with one unit does inside) and with a worker a core,
then the Ray path with one, two and three worker nodes of a local cluster (a head and `ray start`
nodes on loopback, each advertising one `atoll_judge` unit). Each row is the
median of `--repeats` submissions; the Ray path's per-case overhead is its
one-node time less the local one-worker time, per case.

On a machine with fewer cores than nodes the extra nodes share the same
cores: there the table shows the Ray path's overhead, not a speed-up; on
machines of their own each node adds its units.

    uv run python benchmarks/judge_ray.py [--repeats 5]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.ray_cluster import DRIVER_ENV, local_ray_cluster  # noqa: E402

os.environ.update(DRIVER_ENV)  # before Ray is imported: this driver joins on loopback

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from atoll.judge.engine import Engine  # noqa: E402
from atoll.judge.problems import load_problems  # noqa: E402
from atoll.judge.ray_engine import RayEngine  # noqa: E402
from atoll.judge.ray_node import NodeSetup  # noqa: E402

SOURCE = (REPO / "tests" / "judge" / "programs" / "shelf.cpp").read_bytes()
NODE = {"atoll_judge": 1.0}
console = Console(width=120)


def _median_seconds(judge: Callable[[], dict[str, object]], repeats: int) -> float:
    """Median wall seconds of `repeats` judgings, after one that compiles and warms up."""
    first = judge()
    assert first["status"] == "done", first
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = judge()
        times.append(time.perf_counter() - started)
        assert result["status"] == "done", result
    return statistics.median(times)


def main(repeats: int = typer.Option(5, min=1, help="Judgings per row (after a warm-up).")) -> None:
    problems = load_problems()
    cases = len(problems["0"].cases)
    rows: list[tuple[str, float]] = []
    cores = os.cpu_count() or 1
    for workers in (1, cores):
        with tempfile.TemporaryDirectory(prefix="judge-ray-bench-") as state:
            engine = Engine(problems, Path(state), workers=workers)
            try:
                seconds = _median_seconds(lambda e=engine: e.judge("0", SOURCE), repeats)
            finally:
                engine.close()
        rows.append((f"local engine, {workers} worker{'s' if workers > 1 else ''}", seconds))
    setup = NodeSetup(None, None, "bwrap", tuple(problems))
    with local_ray_cluster([NODE]) as cluster:
        ray_engine = RayEngine(problems, setup, cluster.address)
        try:
            for nodes in (1, 2, 3):
                while len(cluster.workers) < nodes:
                    cluster.add_worker(NODE)
                cluster.wait_ready()
                seconds = _median_seconds(lambda: ray_engine.judge("0", SOURCE), repeats)
                assert ray_engine.workers == nodes, ray_engine.workers
                rows.append((f"Ray, {nodes} node{'s' if nodes > 1 else ''} x 1 unit", seconds))
        finally:
            ray_engine.close()
    table = Table(
        title=f"problem 0, shelf packer, {cases} cases, median of {repeats} ({os.cpu_count()} cores)"
    )
    for column in ("path", "seconds", "cases/s", "x local, 1 worker"):
        table.add_column(column, justify="left" if column == "path" else "right")
    local = rows[0][1]
    for name, seconds in rows:
        table.add_row(name, f"{seconds:.2f}", f"{cases / seconds:.1f}", f"{local / seconds:.2f}")
    console.print(table)
    overhead = (rows[2][1] - local) / cases
    console.print(
        f"Ray path's overhead per case (1 node vs local, 1 worker each): {overhead * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    typer.run(main)
