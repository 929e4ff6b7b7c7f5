"""The `checker` scorer: a search's candidates graded by the task's own bundled grader.

A search on an emitted task must score each candidate exactly as the task's
verifier will score the program it hands in, or the search optimizes a number
the trial never reports. So each candidate is graded by running the task's own
`tests/test.sh` (the bundle's grader, generator, scorer and validator) in the
verifier's box (`verifier_box`: built the way `atoll-local` builds a trial's,
with the limits task.toml gives the verifier phase). The grader itself then
applies the per-instance limits of the task's contract. The reward is the mean
of the per-case scores, read back from the `scores.json` it writes, and the
candidate's receipt carries those per-case scores.

A grading that ends without a scores file (a failed self-check, a box that
would not start, a run past the verifier's timeout) is `ScorerUnavailable`:
the task or the machine is broken, and the candidate is not to blame.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from atoll.checker import layout
from atoll.checker.grader import CheckerError, GradeReport, load_contract, read_scores
from atoll.checker.verifier_box import (
    WORK_LOCK,
    VerifierBox,
    VerifierPhase,
    last_line,
    owned,
    remove_stale_roots,
)
from atoll.core.digests import tree_sha256
from atoll.core.sandbox import SandboxResult
from atoll.core.scoring import CandidateScore, ScorerSetup, ScorerUnavailable, ScoreStatus

__all__ = [
    "SCORER_NAME",
    "WORK_LOCK",
    "CheckerScorer",
    "VerifierPhase",
    "open_checker_scorer",
    "remove_stale_roots",
    "score_of",
]

SCORER_NAME = "checker"
SCORES_FILE = "scores.json"


class CheckerScorer:
    """Grades programs with one task's bundled grader, one fresh box per program.

    The program is handed in under the name the task's contract gives it
    (`solution.py`, or `solution.cpp` for a C++ task, which the grader then
    compiles once per grading with the contract's flags), as a trial's would be.
    At most `VerifierPhase.concurrency` gradings run at once (callers such as
    Guidance-TTT's judge threads wait their turn), so a candidate's score does
    not depend on how many others are graded beside it. A task whose task.toml
    declares a bundle hash is checked against it first: the receipts name that
    hash, so it must be the hash of what grades.
    """

    def __init__(self, task_dir: Path, *, work_dir: Path | None = None) -> None:
        self.task_dir = Path(task_dir)
        self.tests_dir = self.task_dir / "tests"
        if not (self.tests_dir / "test.sh").is_file():
            raise ValueError(
                f"{self.tests_dir / 'test.sh'}: missing; the checker scorer grades with the "
                "task's own verifier script"
            )
        self.bundle_hash = _verified_hash(self.task_dir)
        self.tests_sha256 = tree_sha256(self.tests_dir)
        try:
            contract = load_contract(self.tests_dir)
        except CheckerError as exc:
            raise ValueError(f"{self.tests_dir}: {exc}") from None
        self.language = contract.language
        self.submission_name = contract.submission_name
        self.work_dir = work_dir
        self.box = VerifierBox(
            self.task_dir,
            self.submission_name,
            scorer=SCORER_NAME,
            verifier="the task's grader",
            work_dir=work_dir,
        )
        self.phase = self.box.phase

    def check(self) -> None:
        """The sandbox works here; the grader's own self-checks run with every grading."""
        self.box.check()

    def close(self) -> None:
        """Stop every grading in flight (each then fails as unavailable) and refuse new ones."""
        self.box.close()

    def score(self, program: str) -> CandidateScore:
        """Grade one program as the task's verifier would: its reward and per-case scores."""
        if self.box.closed:
            raise ScorerUnavailable("the checker scorer is closed")
        with self.box.slots:
            report = self.grade(program)
        return score_of(report, self._receipt(report, program))

    def grade(self, program: str) -> GradeReport:
        """Run the task's test.sh on `program` in a fresh box; its scores.json, read back."""
        return self.box.run(program, _read_report)

    def _receipt(self, report: GradeReport, program: str) -> dict[str, Any]:
        return {
            "scorer": SCORER_NAME,
            "bundle_hash": self.bundle_hash,
            "tests_sha256": self.tests_sha256,
            "grader_version": report.grader_version,
            "submission_sha256": hashlib.sha256(program.encode("utf-8")).hexdigest(),
            "reward": report.reward,
            "counts": {k: v for k, v in report.counts().items() if v},
            "case_scores": report.scores,
            "statuses": report.statuses,
        }


def _read_report(logs: Path, result: SandboxResult) -> GradeReport:
    scores = logs / SCORES_FILE
    if not scores.is_file():
        raise ScorerUnavailable(f"the task's grader wrote no scores: {last_line(result)}")
    try:
        return read_scores(scores)
    except CheckerError as exc:
        raise ScorerUnavailable(f"the task's grader failed: {exc}") from None


def score_of(report: GradeReport, receipt: dict[str, Any]) -> CandidateScore:
    """A grading as a candidate score: valid when any case ran to a feasible output.

    A program that produced nothing usable on any case (a syntax error, a crash,
    a rejected file) is invalid, reward 0; one that did on some case is a valid
    candidate whose raw score is the task's reward, 0 included.
    """
    counts = {k: v for k, v in report.counts().items() if v}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    message = f"{len(report.cases)} cases: {summary}; reward {report.reward:.6g}"
    if not counts.get("ok"):
        details = [c.detail for c in report.cases if c.detail.strip()]
        if details:
            message += f" ({_gist(details[0])})"
        return CandidateScore(ScoreStatus.INVALID, None, 0.0, message, receipt)
    return CandidateScore(ScoreStatus.VALID, report.reward, report.reward, message, receipt)


def _gist(detail: str, limit: int = 300) -> str:
    """A case's failure in one line: its first line and the error (a traceback's last line,
    a compiler's first `error:` line)."""
    lines = [line.strip() for line in detail.strip().splitlines() if line.strip()]
    # A compiler names the first error on a line of its own; a traceback ends with its error.
    errors = [line for line in lines[1:] if "error:" in line]
    last = errors[0] if errors else lines[-1]
    gist = lines[0] if len(lines) == 1 else f"{lines[0]} ... {last}"
    return gist if len(gist) <= limit else gist[: limit - 3] + "..."


def _verified_hash(task_dir: Path) -> str | None:
    """The bundle hash task.toml declares, once the bundle's content is checked against it.

    A task without a declared hash (a hand-written one) grades as it is, and
    its receipts carry no bundle hash; one whose content does not match its
    hash is refused, since its receipts would name a bundle that is not the
    one graded.
    """
    try:
        config = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    declared = layout.declared_hash(config)
    if declared is None:
        return None
    try:
        return layout.verify(task_dir).bundle_hash
    except layout.LayoutError as exc:
        raise ValueError(f"{task_dir}: the checker scorer refuses this bundle: {exc}") from None


@contextmanager
def open_checker_scorer(setup: ScorerSetup) -> Iterator[CheckerScorer]:
    """The checker scorer of the task in `setup.task_dir`, in the language its grader takes."""
    if setup.task_dir is None:
        raise ValueError("the checker scorer needs the task's directory (its tests/ grade)")
    work_dir = None if setup.state_dir is None else setup.state_dir / "checker"
    scorer = CheckerScorer(setup.task_dir, work_dir=work_dir)
    if setup.language != scorer.language:
        raise ValueError(
            f"the task's grader takes {scorer.language} programs (tests/contract.json); "
            f"its search contract says solution_language {setup.language!r}"
        )
    with owned(work_dir, SCORER_NAME):
        try:
            scorer.check()
            yield scorer
        finally:
            scorer.close()
