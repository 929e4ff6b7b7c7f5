"""How one test case ended, shared by the checker, the runner and the HTTP answers.

Time and memory failures keep their own statuses (the authoritative judge
relabels them as wrong answers, which hides why a program lost the case).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CaseStatus(StrEnum):
    OK = "ok"
    PRESENTATION_ERROR = "presentation_error"  # output not in the required format
    WRONG_ANSWER = "wrong_answer"  # well-formed but invalid (bounds, overlap)
    RUNTIME_ERROR = "runtime_error"  # non-zero exit or killed by a signal
    CPU_TIME_LIMIT = "cpu_time_limit"
    WALL_TIME_LIMIT = "wall_time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"


@dataclass(frozen=True)
class CheckResult:
    """What a checker says about one output: a status, the case's ratio and why."""

    status: CaseStatus
    ratio: float
    message: str

    @property
    def ok(self) -> bool:
        return self.status is CaseStatus.OK
