"""Seconds per `atoll pi train hidden` iteration on the local Tinker server, split by phase.

Starts SkyRL tx on a tiny model (its own state directory; stopped at the
end), runs `atoll pi train hidden` at groups x size 2 x 4 for N iterations
and prints, per iteration, the wall seconds and their parts as the
cookbook's loop measured them: sampling (the rollouts' wall time, checks
included, since they run inside the rollouts), sandbox checking (the summed
seconds of every env step, which is the check), and training
(forward-backward, optimizer step and the per-iteration checkpoint). The
first iteration includes the engine's compilations; the JAX compile cache
(under the managed environment's cache) makes later runs faster.

    uv run python benchmarks/tinker_iteration.py [--iterations 3] [--max-tokens 32]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table


def main(
    iterations: int = typer.Option(3, "--iterations"),
    max_tokens: int = typer.Option(32, "--max-tokens"),
) -> None:
    atoll = str(Path(sys.executable).parent / "atoll")
    console = Console()
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "ATOLL_TINKER_LOCAL_DIR": str(Path(scratch) / "local")}
        model = Path(scratch) / "model"
        subprocess.run([atoll, "tinker", "tiny-model", str(model)], env=env, check=True)
        up = subprocess.run(
            [atoll, "tinker", "local", "up", "--base-model", str(model), "--print-env"],
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        for line in up.stdout.splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value
        out = Path(scratch) / "run"
        try:
            subprocess.run(
                [
                    atoll, "pi", "train", "hidden", "--base-model", str(model),
                    "--groups-per-batch", "2", "--group-size", "4",
                    "--max-tokens", str(max_tokens), "--iterations", str(iterations),
                    "--out", str(out),
                ],
                env=env, check=True,
            )  # fmt: skip
        finally:
            subprocess.run([atoll, "tinker", "local", "down"], env=env, check=False)
        rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    table = Table(title=f"hidden, 2 groups x 4, max {max_tokens} tokens/turn: seconds")
    for heading in ("iteration", "total", "sampling", "sandbox checking", "training"):
        table.add_column(heading, justify="right")
    for row in rows:
        training = row.get("time/train_step", 0.0) + row.get("time/save_checkpoint", 0.0)
        table.add_row(
            str(row["step"]),
            f"{row['time/total']:.1f}",
            f"{row['time/sampling']:.1f}",
            f"{row.get('time/env_step:total', 0.0):.1f}",
            f"{training:.1f}",
        )
    console.print(table)


if __name__ == "__main__":
    typer.run(main)
