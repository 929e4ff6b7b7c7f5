"""What one hidden-variant check costs: a SandboxFusion round trip per submission.

Checks a correct submission (6 hidden calls) N times per family and
language through the in-process SandboxFusion-compatible service (the same
server as `atoll sandbox fusion-serve`, reached with SandboxFusion's own
client), one after the other, then a batch from 8 threads at once as a
trainer's group would send it, and prints the median and 90th percentile
seconds per check. Target: a sequential check under 0.5 s (median), so that
checking a 2 x 4 batch stays small beside sampling and training.

    uv run python benchmarks/hidden_check.py [--runs 20]
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import typer
from rich.console import Console
from rich.table import Table

from atoll.core.sandbox.fusion import EmbeddedFusionServer
from atoll.pi_train.hidden.families import FAMILIES, Instance
from atoll.pi_train.hidden.harness import check_submission

TARGET_S = 0.5
BATCH = 8  # groups x size of the benchmark: 2 x 4

SOLUTIONS = {
    ("multiples", "python"): """
from itertools import combinations
from math import lcm

def solve(factors, limit):
    total = 0
    for k in range(1, len(factors) + 1):
        for chosen in combinations(sorted(set(factors)), k):
            step = lcm(*chosen)
            n = (limit - 1) // step
            total += (-1) ** (k + 1) * step * n * (n + 1) // 2
    return total
""",
    ("multiples", "javascript"): """
const gcd = (a, b) => (b ? gcd(b, a % b) : a);
function solve(factors, limit) {
  const fs = [...new Set(factors)].map(BigInt);
  let total = 0n;
  for (let mask = 1; mask < 1 << fs.length; mask++) {
    let step = 1n, bits = 0;
    fs.forEach((f, i) => { if (mask & (1 << i)) { step = (step * f) / gcd(step, f); bits++; } });
    const n = (BigInt(limit) - 1n) / step;
    total += (bits % 2 ? 1n : -1n) * ((step * n * (n + 1n)) / 2n);
  }
  return total;
}
""",
    ("recurrence", "python"): """
def solve(a, b, limit, modulus, residue):
    total = sum(t for t in (a, b) if t <= limit and t % modulus == residue)
    x, y = a, b
    while x + y <= limit:
        x, y = y, x + y
        total += y if y % modulus == residue else 0
    return total
""",
    ("recurrence", "javascript"): """
function solve(a, b, limit, modulus, residue) {
  let [x, y, L, m, r, total] = [a, b, limit, modulus, residue, 0].map(BigInt);
  for (const t of [x, y]) if (t <= L && t % m === r) total += t;
  while (x + y <= L) { [x, y] = [y, x + y]; if (y % m === r) total += y; }
  return total;
}
""",
}


def _check(url: str, family: str, language: str, instance: Instance) -> float:
    started = time.perf_counter()
    result = check_submission(SOLUTIONS[family, language], language, instance, url)
    if result.passed != result.total:
        raise SystemExit(f"the {language} {family} solution failed: {result}")
    return time.perf_counter() - started


def _p90(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.9) - 1)]


def main(runs: int = typer.Option(20, help="Sequential checks per family and language.")) -> None:
    console = Console()
    table = Table(title=f"Seconds per check (6 hidden calls), {runs} sequential runs each")
    for column in ("family", "language", "median s", "p90 s", "target"):
        table.add_column(column)
    with EmbeddedFusionServer() as server:
        for family, language in SOLUTIONS:
            instance = FAMILIES[family].instance("train", 0)
            _check(server.url, family, language, instance)  # warm: the backend's first probe
            times = [_check(server.url, family, language, instance) for _ in range(runs)]
            median = statistics.median(times)
            verdict = "met" if median <= TARGET_S else "missed"
            table.add_row(
                family,
                language,
                f"{median:.3f}",
                f"{_p90(times):.3f}",
                f"{verdict} (<= {TARGET_S})",
            )
        batch = [("multiples", "python"), ("recurrence", "javascript")] * (BATCH // 2)
        started = time.perf_counter()
        with ThreadPoolExecutor(BATCH) as pool:
            list(
                pool.map(
                    lambda pair: _check(
                        server.url, pair[0], pair[1], FAMILIES[pair[0]].instance("train", 1)
                    ),
                    batch,
                )
            )
        batch_s = time.perf_counter() - started
    console.print(table)
    console.print(f"A batch of {BATCH} checks from {BATCH} threads: {batch_s:.2f} s in all")


if __name__ == "__main__":
    typer.run(main)
