"""Harness overhead of one search step: an 8 x 16 step whose models and judge answer instantly.

Everything the step loop itself does is timed: PUCT selection, both prompts,
strict parsing, booking each rollout durably in the archive and in the step
journal (several fsync'd appends per rollout), report bodies, the thread pool
and its concurrency limits, and the barrier. The guidance service, executor
and judge are in-process stand-ins that answer at once, so the time measured
is the harness's alone. Target: under 2 s per step on 2 cores.

    uv run python benchmarks/step_overhead.py [--groups 8] [--rollouts 16] [--repeats 5]
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from atoll.guidance_ttt.contract import Direction, Language, Task, TaskContract
from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.search.archive import Archive
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification
from atoll.guidance_ttt.search.step import Limits, StepContext, run_step
from atoll.guidance_ttt.services.executor import ExecutorAnswer
from atoll.guidance_ttt.services.reef_guidance import GuidanceSample
from atoll.guidance_ttt.state.durable_archive import Library

app = typer.Typer(add_completion=False)
console = Console(width=110)

PROGRAM = "#include <cstdio>\nint main() {\n" + '    std::puts("0 0");\n' * 60 + "}\n"
STATEMENT = "Pack the polyominoes into the smallest square. " * 80
TASK = Task(
    statement=STATEMENT,
    contract=TaskContract(
        solution_language=Language.CPP,
        mechanism_constraint="Finish within the time limit.",
        objective="Pack the polyominoes into the smallest square.",
        raw_score_label="judge score",
        score_direction=Direction.MAX,
        solution_contract="a complete C++17 program reading stdin and writing stdout",
        judge_problem_id="0",
    ),
)


class InstantGuidance:
    """Answers every guidance request at once and acknowledges every report."""

    def __init__(self) -> None:
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def sample(self, prompt: Prompt) -> GuidanceSample:
        with self._lock:
            number = next(self._ids)
        text = f"Some thinking.\n<guidance>Idea {number}: sort by area, then pack.</guidance>"
        return GuidanceSample(f"receipt-{number}", text, None, "stop", 40)

    def report(self, payload: dict[str, Any], receipt: str) -> str:
        return str(payload["agent_record_id"])


class InstantExecutor:
    def __init__(self) -> None:
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def complete(self, prompt: Prompt) -> ExecutorAnswer:
        with self._lock:
            number = next(self._ids)
        program = f"// variant {number}\n{PROGRAM}"
        text = (
            f"<solution>\n```cpp\n{program}```\n</solution>\n<summary>Variant {number}.</summary>"
        )
        return ExecutorAnswer(text, None, "stop", 400)


class InstantJudge:
    def score(self, program: str) -> Verification:
        raw = float(len(program) % 97)
        return Verification(Status.VALID, raw, raw, "Correct Answer")


def one_step(root: Path, groups: int, rollouts: int) -> float:
    seed = Entry(PROGRAM, "A trivial packer.", Verification(Status.VALID, 1.0, 1.0, "seed"))
    library = Library.create(root, Archive.seeded(seed, Direction.MAX, groups))
    library.commit()
    context = StepContext(
        task=TASK,
        library=library,
        guidance=InstantGuidance(),
        executor=InstantExecutor(),
        scorer=InstantJudge(),
        run_id="bench",
        groups=groups,
        rollouts=rollouts,
        limits=Limits(),
    )
    started = time.perf_counter()
    summary = run_step(context, 0)
    elapsed = time.perf_counter() - started
    library.close()
    assert summary.sampled == groups * rollouts
    return elapsed


@app.command()
def main(groups: int = 8, rollouts: int = 16, repeats: int = 5) -> None:
    times = []
    with tempfile.TemporaryDirectory(prefix="step-overhead-") as tmp:
        one_step(Path(tmp) / "warmup", groups, rollouts)
        for index in range(repeats):
            times.append(one_step(Path(tmp) / f"run{index}", groups, rollouts))
    median = statistics.median(times)
    grid = groups * rollouts
    table = Table(
        title=f"Harness overhead of one {groups} x {rollouts} step ({os.cpu_count()} cores)"
    )
    for column in (
        "rollouts",
        "median s",
        "min s",
        "max s",
        "ms / rollout",
        "target s",
        "vs target",
    ):
        table.add_column(column, justify="right")
    table.add_row(
        str(grid),
        f"{median:.3f}",
        f"{min(times):.3f}",
        f"{max(times):.3f}",
        f"{1000 * median / grid:.2f}",
        "2.000",
        f"{median / 2.0:.2f}x",
    )
    console.print(table)


if __name__ == "__main__":
    app()
