"""How one test case ended, shared by the checkers, the runner and the HTTP answers.

Time and memory failures keep their own statuses (the authoritative judge
relabels them as wrong answers, which hides why a program lost the case).
A testlib checker's or interactor's exit code names its verdict: 0 ok,
1 wrong answer, 2 presentation error (8: unexpected end of file), 3 FAIL
(the checker could not judge the output, e.g. it is malformed in a way the
checker did not expect: `checker_fail`), 7 points (`quitp`: the case's
score is in the message). Only exit 0 is OK, as at the authority; the
case's ratio comes from the message either way.
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
    POINTS = "points"  # a testlib checker scored the case (quitp, exit code 7)
    CHECKER_FAIL = "checker_fail"  # testlib FAIL (exit 3), or the checker crashed


# testlib's exit codes (no EJUDGE/CONTESTER/TESTSYS variants: the authority builds plainly)
TESTLIB_EXIT = {
    0: CaseStatus.OK,
    1: CaseStatus.WRONG_ANSWER,
    2: CaseStatus.PRESENTATION_ERROR,
    3: CaseStatus.CHECKER_FAIL,
    4: CaseStatus.PRESENTATION_ERROR,  # _dirt: extra output
    7: CaseStatus.POINTS,
    8: CaseStatus.PRESENTATION_ERROR,  # _unexpected_eof
}


def testlib_status(exit_code: int) -> CaseStatus:
    """The status a testlib exit code stands for (any other non-zero code: wrong answer)."""
    return TESTLIB_EXIT.get(exit_code, CaseStatus.WRONG_ANSWER)


@dataclass(frozen=True)
class CheckResult:
    """What a checker says about one output: a status, the case's ratio and why."""

    status: CaseStatus
    ratio: float
    message: str

    @property
    def ok(self) -> bool:
        return self.status is CaseStatus.OK
