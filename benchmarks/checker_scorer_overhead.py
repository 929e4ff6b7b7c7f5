"""What grading a search candidate in the task's own verifier box costs, against grading on the host.

The `checker` scorer grades each Guidance-TTT candidate by running the task's
tests/test.sh in a fresh box (a private root, a user namespace, bubblewrap),
as the task's verifier runs in a trial; `atoll.checker.grade_task` grades the
same program in this process. Both run the grader's self-checks and every
instance. Each program is graded by both, back to back, so both see the same
machine; the difference is what the box costs per candidate. Target: at most
1 s (median) per candidate on 2 cores. The two must agree on every per-case
score, or the run stops. Needs root (both switch uids).

    sudo uv run python benchmarks/checker_scorer_overhead.py [--rounds 3]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from atoll.checker import grade_task
from atoll.checker.scorer import CheckerScorer

EXAMPLE = Path(__file__).resolve().parents[1] / "tasks" / "frontiersmith-example"
PROGRAMS = {
    "empty plan": "import json\nprint(json.dumps({'beacons': []}))\n",
    "reference": (EXAMPLE / "solution" / "solution.py").read_text(encoding="utf-8"),
}
TARGET_S = 1.0


def main(rounds: int = typer.Option(3, help="gradings of each program by each way")) -> None:
    scorer = CheckerScorer(EXAMPLE)
    table = Table(title=f"checker scorer vs host grading, frontiersmith-example, {rounds} rounds")
    for column in ("program", "box median s", "host median s", "box - host s", "target"):
        table.add_column(column)
    scratch = Path(tempfile.mkdtemp(prefix="checker-scorer-bench-"))
    for name, source in PROGRAMS.items():
        path = scratch / "solution.py"
        path.write_text(source, encoding="utf-8")
        box, host = [], []
        for _ in range(rounds):
            started = time.monotonic()
            scored = scorer.score(source)
            box.append(time.monotonic() - started)
            started = time.monotonic()
            report = grade_task(EXAMPLE, path)
            host.append(time.monotonic() - started)
            if scored.receipt["case_scores"] != report.scores:
                raise SystemExit(f"{name}: the box and the host disagree on the per-case scores")
        extra = statistics.median(box) - statistics.median(host)
        table.add_row(
            name,
            f"{statistics.median(box):.2f}",
            f"{statistics.median(host):.2f}",
            f"{extra:+.2f}",
            "met" if extra <= TARGET_S else "MISSED",
        )
    scratch.joinpath("solution.py").unlink(missing_ok=True)
    scratch.rmdir()
    Console().print(table)


if __name__ == "__main__":
    typer.run(main)
