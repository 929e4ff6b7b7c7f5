"""Programs from answers without a `<solution>` block are counted apart, step by step and per run."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

from support.guidance_run import new_library, write_task

from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.search.scored_program import Status, Verification
from atoll.guidance_ttt.search.step import (
    PROGRAM_FROM_FALLBACK,
    Limits,
    StepContext,
    StepSummary,
    run_step,
)
from atoll.guidance_ttt.services.executor import ExecutorAnswer
from atoll.guidance_ttt.services.reef_guidance import GuidanceSample
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.run_report import RunReport, StepRow
from atoll.guidance_ttt.state.step_journal import read_step


def _program(number: int) -> str:
    return f"// variant {number}\nint main() {{ return 0; }}"


def _answer(number: int) -> str:
    """Call 1, 4, ...: the required shape; 2, 5, ...: no <solution> block; 3, 6, ...: a bad one."""
    program = f"```cpp\n{_program(number)}\n```"
    summary = f"<summary>Variant {number}.</summary>"
    kind = number % 3
    if kind == 1:
        return f"<solution>\n{program}\n</solution>\n{summary}"
    if kind == 2:
        return f"Here is the program.\n{program}\n{summary}"
    return f"{program}\n<solution>\nsee above\n</solution>\n{summary}"


class _Guidance:
    """Well-formed guidance for every slot; every report is acknowledged."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def sample(self, prompt: Prompt, seed: int | None = None) -> GuidanceSample:
        with self._lock:
            number = next(self._numbers)
        return GuidanceSample(
            f"receipt-{number}", "<guidance>Sort by area.</guidance>", None, "stop", 5
        )

    def report(self, payload: dict[str, Any], receipt: str) -> str:
        return f"report-{receipt}"


class _Executor:
    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def complete(self, prompt: Prompt) -> ExecutorAnswer:
        with self._lock:
            number = next(self._numbers)
        return ExecutorAnswer(_answer(number), None, "stop", 50)


class _Scorer:
    def score(self, program: str) -> Verification:
        raw = float(len(program))
        return Verification(Status.VALID, raw, raw, "ok")


def test_a_step_counts_programs_from_the_fallback_apart(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task")
    library = new_library(tmp_path / "state", task, groups=2)
    context = StepContext(
        task=task,
        library=library,
        guidance=_Guidance(),
        executor=_Executor(),
        scorer=_Scorer(),
        run_id="fallback-run",
        groups=2,
        rollouts=3,
        limits=Limits(guidance=2, executor=2, judge=2),
    )
    summary = run_step(context, 0)
    library.close()

    # Six answers: two in the required shape, two without a <solution> block (scored, and
    # counted as from the fallback), two with a <solution> block holding no code (parse errors,
    # not counted: the fallback is not taken when the answer has a solution block).
    assert summary.sampled == 6 and summary.valid == 4
    assert summary.programs_from_fallback == 2
    assert summary.to_json()["programs_from_fallback"] == 2
    journal = read_step(RunDir(tmp_path / "state").step_journal(0), 0)
    rollouts = [done.rollout for done in journal.finished.values()]
    marked = [r for r in rollouts if r.metadata.get(PROGRAM_FROM_FALLBACK)]
    assert len(marked) == 2
    assert all(r.verification.status is Status.VALID for r in marked)
    errors = [r for r in rollouts if r.verification.status is Status.PARSE_ERROR]
    assert len(errors) == 2
    assert all(r.program is None and PROGRAM_FROM_FALLBACK not in r.metadata for r in errors)
    assert all("inside the <solution> block" in r.verification.message for r in errors)


def _row(summary: dict[str, Any]) -> StepRow:
    return StepRow(summary, [], [], 0, 0, None, None, 0)


def test_the_report_counts_the_fallback_per_step_and_per_run() -> None:
    counted = StepSummary(
        step=1,
        elapsed_s=1.0,
        sampled=6,
        valid=4,
        well_formed_guidance=6,
        non_constant_groups=2,
        degenerate=False,
        retained_trajectories=6,
        best_raw_score=40.0,
        orphans=[],
        resumed_rollouts=0,
        reposted_reports=0,
        programs_from_fallback=2,
    ).to_json()
    # A summary written before the count existed, when no program came from a fallback.
    older = {k: v for k, v in counted.items() if k != "programs_from_fallback"} | {"step": 0}
    report = RunReport("run", "scenario", "off", {}, rows=[_row(older), _row(counted)])
    lines = [row.to_json() for row in report.rows]
    assert [line["programs_from_fallback"] for line in lines] == [0, 2]
    assert report.to_json()["programs_from_fallback"] == 2
    assert StepSummary.from_json(older).programs_from_fallback == 0
