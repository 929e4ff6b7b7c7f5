"""The `checker` scorer: a search's candidates graded by the task's own bundled grader.

A search on an emitted task must score each candidate exactly as the task's
verifier will score the program it hands in, or the search optimizes a number
the trial never reports. So each candidate is graded by running the task's own
`tests/test.sh` (the bundle's grader, generator, scorer and validator) in a
box built the way the `atoll-local` environment builds a trial's: a private
root on the host whose /tests, /workspace and /logs are fresh directories, a
user namespace whose root is the grader (the verifier runs as root) and whose
other ids are unprivileged host ids, no network, and the limits task.toml gives
the verifier phase (its timeout, the environment's memory and CPUs). The
grader itself then applies the per-instance limits of the task's contract. The
reward is the mean of the per-case scores, read back from the `scores.json` it
writes, and the candidate's receipt carries those per-case scores.

A grading that ends without a scores file (a failed self-check, a box that
would not start, a run past the verifier's timeout) is `ScorerUnavailable`:
the task or the machine is broken, and the candidate is not to blame.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.checker.grader import CheckerError, GradeReport, load_contract, read_scores
from atoll.core.environments.trial_root import BLOCK, TrialRoot
from atoll.core.sandbox import (
    CancelToken,
    Limits,
    Mount,
    Network,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    get_backend,
)
from atoll.core.sandbox.userns import UserNamespace
from atoll.core.scoring import CandidateScore, ScorerSetup, ScorerUnavailable, ScoreStatus
from atoll.core.sizes import MiB

SCORER_NAME = "checker"
TESTS = "tests"
TEST_SCRIPT = "/tests/test.sh"
WORKSPACE = "/workspace"
VERIFIER_LOGS = "/logs/verifier"
SCORES_FILE = "scores.json"
# What a verifier phase gets when task.toml says nothing (Harbor's defaults).
DEFAULT_VERIFIER_TIMEOUT_S = 600.0
OUTPUT_BYTES = 64 * MiB
PROCESSES = 4096  # the box as a whole; the grader limits each run of the candidate itself


@dataclass(frozen=True)
class VerifierPhase:
    """What task.toml says about the verifier phase: its timeout and the box's resources."""

    timeout_s: float
    memory_bytes: int | None
    cpus: float | None

    @classmethod
    def of(cls, task_dir: Path) -> VerifierPhase:
        try:
            config = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"{task_dir / 'task.toml'}: cannot be read ({exc})") from None
        verifier = config.get("verifier", {})
        environment = config.get("environment", {})
        memory_mb = environment.get("memory_mb")
        cpus = environment.get("cpus")
        return cls(
            timeout_s=float(verifier.get("timeout_sec", DEFAULT_VERIFIER_TIMEOUT_S)),
            memory_bytes=int(memory_mb) * MiB if memory_mb else None,
            cpus=float(cpus) if cpus else None,
        )


class CheckerScorer:
    """Grades programs with one task's bundled grader, one fresh box per program.

    The program is handed in under the name the task's contract gives it
    (`solution.py`, or `solution.cpp` for a C++ task, which the grader then
    compiles once per grading with the contract's flags), as a trial's would be.
    """

    def __init__(self, task_dir: Path, *, work_dir: Path | None = None) -> None:
        self.task_dir = Path(task_dir)
        self.tests_dir = self.task_dir / TESTS
        if not (self.tests_dir / "test.sh").is_file():
            raise ValueError(
                f"{self.tests_dir / 'test.sh'}: missing; the checker scorer grades with the "
                "task's own verifier script"
            )
        self.phase = VerifierPhase.of(self.task_dir)
        try:
            contract = load_contract(self.tests_dir)
        except CheckerError as exc:
            raise ValueError(f"{self.tests_dir}: {exc}") from None
        self.language = contract.language
        self.submission_name = contract.submission_name
        self.bundle_hash = _declared_hash(self.task_dir)
        self.tests_sha256 = _tree_digest(self.tests_dir)
        self.work_dir = work_dir
        self._backend = get_backend("bwrap")
        self._closed = False
        self._lock = threading.Lock()
        self._active: set[CancelToken] = set()

    def check(self) -> None:
        """The sandbox works here; the grader's own self-checks run with every grading."""
        try:
            self._backend.check()
        except SandboxError as exc:
            raise ScorerUnavailable(f"the checker scorer cannot run here: {exc}") from None

    def close(self) -> None:
        """Stop every grading in flight (each then fails as unavailable) and refuse new ones."""
        with self._lock:
            self._closed = True
            active = list(self._active)
        for token in active:
            token.cancel()

    def score(self, program: str) -> CandidateScore:
        """Grade one program as the task's verifier would: its reward and per-case scores."""
        if self._closed:
            raise ScorerUnavailable("the checker scorer is closed")
        report = self.grade(program)
        return score_of(report, self._receipt(report, program))

    def grade(self, program: str) -> GradeReport:
        """Run the task's test.sh on `program` in a fresh box; its scores.json, read back."""
        if self.work_dir is not None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
        root = TrialRoot(self.work_dir)
        try:
            with UserNamespace(root.uids.start, BLOCK) as namespace:
                logs = self._prepare(root, program)
                result = self._run(root, namespace)
            scores = logs / SCORES_FILE
            if not scores.is_file():
                last = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
                why = last.splitlines()[-1] if last else f"status {result.status.value}"
                raise ScorerUnavailable(f"the task's grader wrote no scores: {why}")
            return read_scores(scores)
        except (SandboxError, CheckerError, OSError) as exc:
            raise ScorerUnavailable(f"the task's grader failed: {exc}") from None
        finally:
            root.remove()

    def _prepare(self, root: TrialRoot, program: str) -> Path:
        """/tests (a copy of the task's), /workspace/solution.* and /logs/verifier, as in a trial."""
        owner = root.root_user.host_uid
        tests = root.ensure_top(TESTS)
        shutil.copytree(self.tests_dir, tests, dirs_exist_ok=True, symlinks=True)
        root.chown_tree(tests, owner)
        workspace = root.ensure_top("workspace")
        submission = workspace / self.submission_name
        submission.write_text(program, encoding="utf-8")
        os.chown(submission, owner, owner)
        submission.chmod(0o644)
        logs = root.ensure_top("logs") / "verifier"
        logs.mkdir()
        os.chown(logs, owner, owner)
        return logs

    def _run(self, root: TrialRoot, namespace: UserNamespace) -> SandboxResult:
        user = root.root_user
        mounts = [Mount(root.fs / top, f"/{top}", writable=True) for top in root.tops()]
        mounts += [
            Mount(root.etc / "passwd", "/etc/passwd"),
            Mount(root.etc / "group", "/etc/group"),
        ]
        spec = SandboxSpec(
            mounts=tuple(mounts),
            workdir="/",
            env={
                "HOME": user.home,
                "USER": user.name,
                "LOGNAME": user.name,
                "LANG": "C.UTF-8",
            },
            uid=user.uid,
            gid=user.uid,
            network=Network.NONE,
            limits=Limits(
                cpu_seconds=None,
                wall_seconds=self.phase.timeout_s,
                memory_bytes=self.phase.memory_bytes,
                processes=PROCESSES,
                file_size_bytes=None,
                open_files=None,
                stdout_bytes=OUTPUT_BYTES,
                stderr_bytes=OUTPUT_BYTES,
                cpus=self.phase.cpus,
            ),
            user_namespace=namespace.path,
        )
        with CancelToken() as token:
            with self._lock:
                if self._closed:
                    raise ScorerUnavailable("the checker scorer is closed")
                self._active.add(token)
            try:
                return self._backend.run(["sh", TEST_SCRIPT], spec, cancel=token)
            finally:
                with self._lock:
                    self._active.discard(token)

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


def _declared_hash(task_dir: Path) -> str | None:
    try:
        config = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = config.get("metadata", {}).get("bundle_hash")
    return value if isinstance(value, str) else None


def _tree_digest(directory: Path) -> str:
    """sha256 over the paths and bytes of every file the grading copies (the grader included)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(directory)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


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
    try:
        scorer.check()
        yield scorer
    finally:
        scorer.close()
