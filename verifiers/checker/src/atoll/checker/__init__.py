"""atoll.checker: the isolated grader of emitted optimization tasks.

The public Python API (stable; the FrontierSmith pipeline builds on it):

- `grade(tests_dir, submission, *, out_dir=None, lock=()) -> GradeReport`: self-check
  the task, then run the submission once per instance in isolation and score it;
  `grade_task(task_dir, submission, *, out_dir=None)` does the same for a task
  directory (its tests/ and solution/ are locked while the submission can run).
- `self_check(tests_dir) -> SelfCheckReport`: the checks alone (`.ok`,
  `.failures`, `.require()` raises `SelfCheckFailed` naming the check).
- `read_scores(path) -> GradeReport`: a trial's `scores.json`, read back.
- `GradeReport.reward`, `.cases` (`CaseResult`: `case`, `status`, `score`,
  `feasible`, `wall_time`, `detail`), `.scores`, `.statuses`, `.to_json()`.
- `Contract`, `Limits`, `Example`: `tests/contract.json` as objects.
- `CheckerError` (infrastructure failure, never a score) and its subclass
  `SelfCheckFailed` (`.check`, `.detail`).
- `grader_source() -> bytes`: the grader file every bundle carries as tests/grader.py.
- `Compile` (how a contract's solution is compiled), `TIMEOUT` (the status of a case
  that ran out of time), `JUDGE_ERROR` (the status of a case whose output the task's
  scorer or validator failed on: it scores 0) and `SCORER_NAME` (the name of the
  checker's search scorer).
- The public sub-module `atoll.checker.layout`: the files of a task bundle and
  where each goes (`BundleFile`, `LayoutError`).
- The public sub-module `atoll.checker.grader` itself, for a task verifier that carries
  the grader and runs its candidate with the grader's `Sandbox` (atoll-discovery's).

Everything here but `grade_task` and `grader_source` lives in `atoll.checker.grader`,
a single standard-library file that bundles carry and run in their containers.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.checker.grader import (
        GRADER_VERSION,
        JUDGE_ERROR,
        STATUSES,
        TIMEOUT,
        CaseResult,
        Check,
        CheckerError,
        Compile,
        Contract,
        Example,
        GradeReport,
        Limits,
        SelfCheckFailed,
        SelfCheckReport,
        grade,
        load_contract,
        read_scores,
        self_check,
    )
    from atoll.checker.scorer import SCORER_NAME

# The grader is imported on first use: every `atoll` call loads this package (its hook
# module is in it).
__getattr__ = exports(
    __name__,
    {
        **dict.fromkeys(
            (
                "GRADER_VERSION",
                "JUDGE_ERROR",
                "STATUSES",
                "TIMEOUT",
                "CaseResult",
                "Check",
                "CheckerError",
                "Compile",
                "Contract",
                "Example",
                "GradeReport",
                "Limits",
                "SelfCheckFailed",
                "SelfCheckReport",
                "grade",
                "load_contract",
                "read_scores",
                "self_check",
            ),
            "atoll.checker.grader",
        ),
        "SCORER_NAME": "atoll.checker.scorer",
    },
)

# Sub-modules other distributions may import as well (the README's "Public face").
__public_modules__ = ("layout", "grader")

__all__ = [
    "GRADER_VERSION",
    "JUDGE_ERROR",
    "SCORER_NAME",
    "STATUSES",
    "TIMEOUT",
    "CaseResult",
    "Check",
    "CheckerError",
    "Compile",
    "Contract",
    "Example",
    "GradeReport",
    "Limits",
    "SelfCheckFailed",
    "SelfCheckReport",
    "grade",
    "grade_task",
    "grader_source",
    "load_contract",
    "read_scores",
    "self_check",
]


def grader_source() -> bytes:
    """The exact bytes of the grader module, as a bundle's tests/grader.py carries them."""
    return resources.files("atoll.checker").joinpath("grader.py").read_bytes()


def grade_task(task_dir: Path, submission: Path, *, out_dir: Path | None = None) -> GradeReport:
    """Grade `submission` against a task directory (tests/ and solution/ are locked meanwhile)."""
    from atoll.checker.grader import grade

    task_dir = Path(task_dir)
    return grade(task_dir / "tests", submission, out_dir=out_dir, lock=(task_dir / "solution",))
