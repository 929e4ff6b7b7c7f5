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

    uv run python benchmarks/startup.py [--runs 7] [--only PROBE] [--against OTHER/.venv/bin]

`--against` runs each probe in a second environment too (another checkout's
virtual environment), the two taking turns, for a before/after comparison.
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

# name -> argv in an environment's bin directory; `atoll` rows are what users and
# tests run, `import` rows what a package costs the moment anything touches it.
ATOLL_ARGS: dict[str, list[str]] = {
    "atoll --help": ["--help"],
    "atoll plugins list": ["plugins", "list"],
    "atoll judge --help": ["judge", "--help"],
    "atoll euler --help": ["euler", "--help"],
    "atoll sandbox --help": ["sandbox", "--help"],
    "atoll checker --help": ["checker", "--help"],
    "atoll pi --help": ["pi", "--help"],
    "atoll doctor --help": ["doctor", "--help"],
}
MODULES = (
    "atoll.core",
    "atoll.core.registry",
    "atoll.core.cli",
    "atoll.euler",
    "atoll.checker",
    "atoll.judge.cli",
    "atoll.core.sandbox_cmd",
    "atoll.euler.cli",
)

TARGET_S = {"atoll plugins list": 1.0, "atoll judge --help": 1.0, "import atoll.euler": 0.2}


def probes(bin_dir: Path) -> dict[str, list[str]]:
    """Every probe's argv in the environment whose scripts are in `bin_dir`."""
    python = str(bin_dir / "python")
    found = {"python -c pass": [python, "-c", "pass"]}
    found.update({name: [str(bin_dir / "atoll"), *args] for name, args in ATOLL_ARGS.items()})
    found.update({f"import {m}": [python, "-c", f"import {m}"] for m in MODULES})
    return found


def _once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of `argv`."""
    # Python writes its bytecode caches as a user's would: without them every run
    # would measure compiling the sources, not starting.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COLUMNS"] = "100"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _time(argvs: list[list[str]], runs: int) -> list[tuple[list[float], list[float]]]:
    """Walls and CPU times of `runs` runs of each argv, the argvs taking turns.

    Taking turns spreads a busy machine's swings over every environment alike.
    """
    for argv in argvs:
        _once(argv)  # warm the page cache and the bytecode cache
    samples: list[tuple[list[float], list[float]]] = [([], []) for _ in argvs]
    for _ in range(runs):
        for argv, (walls, cpus) in zip(argvs, samples, strict=True):
            wall, cpu = _once(argv)
            walls.append(wall)
            cpus.append(cpu)
    return samples


def main(
    runs: int = typer.Option(7, min=1, help="Runs per probe (the median is reported)."),
    only: list[str] = typer.Option([], help="Probes to run (default: all), by name."),
    against: Path | None = typer.Option(
        None,
        help="The bin directory of another environment (an older checkout's .venv/bin): "
        "each probe runs there too, in turn with this one, and the table gives both.",
    ),
) -> None:
    console = Console(width=max(Console().width, 110))
    load = os.getloadavg()
    console.print(
        f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{runs} runs per probe"
    )
    here = Path(sys.executable).parent
    environments = [("this", here)] + ([("against", against)] if against else [])
    table = Table(title="atoll start-up (seconds)")
    for column in ("probe", "env", "median", "p90", "min", "CPU median", "target (CPU)"):
        left = column in ("probe", "env")
        table.add_column(column, justify="left" if left else "right", no_wrap=left)
    catalogs = [probes(bin_dir) for _, bin_dir in environments]
    for name in catalogs[0]:
        if only and name not in only:
            continue
        measured = _time([catalog[name] for catalog in catalogs], runs)
        for (label, _), (walls, cpus) in zip(environments, measured, strict=True):
            samples = sorted(walls)
            p90 = samples[min(len(samples) - 1, round(0.9 * (len(samples) - 1)))]
            target = TARGET_S.get(name)
            cpu = statistics.median(cpus)
            mark = "" if target is None else f"{target:.1f}" + (" ok" if cpu <= target else " over")
            table.add_row(
                name,
                label,
                f"{statistics.median(samples):.3f}",
                f"{p90:.3f}",
                f"{samples[0]:.3f}",
                f"{cpu:.3f}",
                mark,
            )
    console.print(table)


if __name__ == "__main__":
    typer.run(main)
