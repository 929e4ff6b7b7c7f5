"""A submission's final result from its cases' outcomes, however and wherever they ran.

The local engine and the Ray engine both end here, so that a verdict
assembled from cases judged on several machines is the one a single machine
gives: the same score, status, summary and per-case fields.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from atoll.judge.case_outcome import CaseOutcome


@dataclass(frozen=True)
class CompileInfo:
    """What a submission's compiles cost: the program's, and its checker's or interactor's."""

    seconds: float
    cached: bool
    tool_seconds: float | None = None  # None: the problem has a Python checker
    tool_cached: bool = False


def result_of(
    cases: Sequence[CaseOutcome], compiled: CompileInfo, started: float
) -> dict[str, Any]:
    """The `done` result; `started` is the `time.perf_counter()` the judging began at."""
    score = 100.0 * sum(case.ratio for case in cases) / len(cases)
    unbounded = 100.0 * sum(case.unbounded for case in cases) / len(cases)
    passed = all(case.ratio == 1.0 for case in cases)
    judge: dict[str, Any] = {
        "compileSeconds": compiled.seconds,
        "compileCached": compiled.cached,
        "seconds": time.perf_counter() - started,
    }
    if compiled.tool_seconds is not None:
        judge.update(
            checkerCompileSeconds=compiled.tool_seconds, checkerCached=compiled.tool_cached
        )
    return {
        "status": "done",
        "passed": passed,
        "result": "Correct Answer" if passed else summary(cases),
        "score": score,
        "scoreUnbounded": unbounded,
        "cases": [case.to_json() for case in cases],
        "judge": judge,
    }


def compile_error(message: str) -> dict[str, Any]:
    """The result of a program that does not compile: an invalid submission, not a score."""
    return {"status": "error", "error": f"compile error: {message}"}


def summary(cases: Sequence[CaseOutcome]) -> str:
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.status.value] = counts.get(case.status.value, 0) + 1
    return ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
