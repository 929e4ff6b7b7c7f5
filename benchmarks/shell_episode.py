"""What one `atoll pi train shell` episode costs outside the model: instances, tools, runs.

For each family and language: the seconds to generate an instance, and, in
a fresh `Episode` per sample, a read of the first data file, a write of a
program that reads every workspace file, and its run through the in-process
SandboxFusion-compatible service (the server `atoll sandbox fusion-serve`
runs, reached with SandboxFusion's own client). Prints medians and 90th
percentiles. Target: a run under 0.5 s (median), so that the tool loop of a
2 x 4 batch stays small beside sampling and training.

    uv run python benchmarks/shell_episode.py [--runs 10]
"""

from __future__ import annotations

import statistics
import time

import typer
from rich.console import Console
from rich.table import Table

from atoll.core.sandbox.fusion import EmbeddedFusionServer
from atoll.pi_train.shell.episode import RUNTIMES, Episode, fusion_runner
from atoll.pi_train.shell.families import FAMILIES

TARGET_S = 0.5
PROGRAMS = {
    "python": "import os\nprint(sum(os.path.getsize(n) for n in os.listdir('.')))\n",
    "javascript": (
        "const fs = require('fs');\n"
        "console.log(fs.readdirSync('.').reduce((t, n) => t + fs.statSync(n).size, 0));\n"
    ),
}


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def main(runs: int = typer.Option(10, "--runs", help="Samples per family and language.")) -> None:
    console = Console()
    table = Table(title=f"shell episode costs, {runs} samples each (seconds)")
    for column in ("family", "language", "generate", "read", "write", "run median", "run p90"):
        table.add_column(column, justify="left" if column in ("family", "language") else "right")
    worst = 0.0
    with EmbeddedFusionServer(workers=2) as server:
        runner = fusion_runner(server.url)
        for family_name, family in sorted(FAMILIES.items()):
            for language, program in PROGRAMS.items():
                generate, read, write, run = [], [], [], []
                for index in range(runs):
                    started = time.perf_counter()
                    instance = family.instance("train", 1000 + index)
                    generate.append(time.perf_counter() - started)
                    runtime = RUNTIMES[language]
                    episode = Episode(runtime, dict(instance.files), runner)
                    for sink, name, arguments in (
                        (read, "read", {"path": sorted(instance.files)[0]}),
                        (write, "write", {"path": runtime.program, "content": program}),
                        (run, "bash", {"command": runtime.command}),
                    ):
                        started = time.perf_counter()
                        episode.call(name, arguments)
                        sink.append(time.perf_counter() - started)
                    assert episode.executions[-1].exit_code == 0, episode.log[-1]
                worst = max(worst, statistics.median(run))
                table.add_row(
                    family_name,
                    language,
                    f"{statistics.median(generate):.4f}",
                    f"{statistics.median(read):.4f}",
                    f"{statistics.median(write):.4f}",
                    f"{statistics.median(run):.3f}",
                    f"{_p90(run):.3f}",
                )
    console.print(table)
    verdict = "meets" if worst <= TARGET_S else "misses"
    console.print(f"slowest median run {worst:.3f} s: {verdict} the {TARGET_S} s target")


if __name__ == "__main__":
    typer.run(main)
