"""What starting `atoll` costs: the command line's start-up and the import of key packages.

Most tests that take over a second start `atoll` in a subprocess, and so does
every user command: start-up is paid on every call. Runs each probe N times,
one after the other, in fresh interpreters of this environment, and prints the
median and 90th percentile wall time, and the median CPU time (user + system)
of the child, which a busy shared machine disturbs far less than wall time.
Targets, in CPU seconds (on an idle machine the wall time is about the same):
`atoll plugins list` and a plugin command's `--help` under 1 s; importing a
plugin's package (what every call does for each plugin) under 0.2 s.

Probes run the environment's own interpreter. On a busy machine compare CPU
times, or rows of one run, and give the load (printed) with the figures.

    uv run python benchmarks/startup.py [--runs 7] [--only PROBE]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

ATOLL = str(Path(sys.executable).with_name("atoll"))

# name -> argv; `atoll` rows are what users and tests run, `import` rows what a
# plugin costs the moment anything touches it.
PROBES: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "atoll --help": [ATOLL, "--help"],
    "atoll plugins list": [ATOLL, "plugins", "list"],
    "atoll judge --help": [ATOLL, "judge", "--help"],
    "atoll euler --help": [ATOLL, "euler", "--help"],
    "atoll sandbox --help": [ATOLL, "sandbox", "--help"],
    "atoll checker --help": [ATOLL, "checker", "--help"],
    "atoll pi --help": [ATOLL, "pi", "--help"],
    "atoll doctor --help": [ATOLL, "doctor", "--help"],
}
for _module in (
    "atoll.core",
    "atoll.core.registry",
    "atoll.core.cli",
    "atoll.euler",
    "atoll.checker",
    "atoll.judge.cli",
    "atoll.core.sandbox_cmd",
    "atoll.euler.cli",
):
    PROBES[f"import {_module}"] = [sys.executable, "-c", f"import {_module}"]

TARGET_S = {"atoll plugins list": 1.0, "atoll judge --help": 1.0, "import atoll.euler": 0.2}


def _time(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of each of `runs` runs of `argv`."""
    env = {**os.environ, "COLUMNS": "100"}
    subprocess.run(argv, capture_output=True, env=env, check=True)  # warm the page cache
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, env=env, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls, cpus


def main(
    runs: int = typer.Option(7, min=1, help="Runs per probe (the median is reported)."),
    only: list[str] = typer.Option([], help="Probes to run (default: all), by name."),
) -> None:
    console = Console()
    load = os.getloadavg()
    console.print(
        f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{runs} runs per probe"
    )
    table = Table(title="atoll start-up (seconds)")
    for column in ("probe", "median", "p90", "min", "CPU median", "target (CPU)"):
        table.add_column(column, justify="left" if column == "probe" else "right")
    for name, argv in PROBES.items():
        if only and name not in only:
            continue
        walls, cpus = _time(argv, runs)
        samples = sorted(walls)
        p90 = samples[min(len(samples) - 1, round(0.9 * (len(samples) - 1)))]
        target = TARGET_S.get(name)
        median = statistics.median(samples)
        cpu = statistics.median(cpus)
        mark = "" if target is None else (f"{target:.1f}" + (" ok" if cpu <= target else " over"))
        table.add_row(name, f"{median:.3f}", f"{p90:.3f}", f"{samples[0]:.3f}", f"{cpu:.3f}", mark)
    console.print(table)


if __name__ == "__main__":
    typer.run(main)
