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
from pathlib import Path, PurePosixPath
from typing import Any

from atoll.checker import layout
from atoll.checker.grader import CheckerError, GradeReport, load_contract, read_scores
from atoll.core import run_lock
from atoll.core.digests import tree_sha256
from atoll.core.environments import dockerfile
from atoll.core.environments.box import box_limits, box_spec
from atoll.core.environments.local import DEFAULT_WORKDIR
from atoll.core.environments.trial_root import (
    BLOCK,
    ROOT_PREFIX,
    TrialRoot,
    TrialRootError,
    top_level,
)
from atoll.core.sandbox import CancelToken, Network, SandboxError, SandboxResult, get_backend
from atoll.core.sandbox.userns import UserNamespace
from atoll.core.scoring import CandidateScore, ScorerSetup, ScorerUnavailable, ScoreStatus

SCORER_NAME = "checker"
TESTS = "tests"
TEST_SCRIPT = "/tests/test.sh"
WORKSPACE = "/workspace"
VERIFIER_LOGS = "/logs/verifier"
SCORES_FILE = "scores.json"
# What a verifier phase gets when task.toml says nothing (Harbor's defaults).
DEFAULT_VERIFIER_TIMEOUT_S = 600.0
WORK_LOCK = ".checker.lock"


@dataclass(frozen=True)
class VerifierPhase:
    """What task.toml and the Dockerfile say about the verifier phase's box.

    Its timeout, the environment's memory and CPUs, and the working directory
    and ENV of the image, as `atoll-local` gives them to the verifier's exec.
    """

    timeout_s: float
    memory_mb: int | None
    cpus: float | None
    workdir: str = DEFAULT_WORKDIR
    image_env: tuple[tuple[str, str], ...] = ()

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
        plan = dockerfile.Plan()
        if (task_dir / "environment" / "Dockerfile").is_file():
            plan = dockerfile.parse(task_dir / "environment" / "Dockerfile")
        return cls(
            timeout_s=float(verifier.get("timeout_sec", DEFAULT_VERIFIER_TIMEOUT_S)),
            memory_mb=int(memory_mb) if memory_mb else None,
            cpus=float(cpus) if cpus else None,
            workdir=environment.get("workdir") or plan.workdir or DEFAULT_WORKDIR,
            image_env=tuple(plan.env.items()),
        )

    @property
    def concurrency(self) -> int:
        """How many gradings may run at once here: the host's CPUs over the box's CPUs.

        Each box gets `cpus` CPUs and the grader a wall clock per instance, so
        more gradings than the host has CPUs for would slow each one down until
        a fine candidate times out: a score that depends on the load.
        """
        return max(1, int((os.cpu_count() or 1) // (self.cpus or 1)))


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
        self.tests_dir = self.task_dir / TESTS
        if not (self.tests_dir / "test.sh").is_file():
            raise ValueError(
                f"{self.tests_dir / 'test.sh'}: missing; the checker scorer grades with the "
                "task's own verifier script"
            )
        self.phase = VerifierPhase.of(self.task_dir)
        self.bundle_hash = _verified_hash(self.task_dir)
        self.tests_sha256 = tree_sha256(self.tests_dir)
        try:
            contract = load_contract(self.tests_dir)
        except CheckerError as exc:
            raise ValueError(f"{self.tests_dir}: {exc}") from None
        self.language = contract.language
        self.submission_name = contract.submission_name
        self.work_dir = work_dir
        self._backend = get_backend("bwrap")
        self._slots = threading.BoundedSemaphore(self.phase.concurrency)
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
        with self._slots:
            report = self.grade(program)
        return score_of(report, self._receipt(report, program))

    def grade(self, program: str) -> GradeReport:
        """Run the task's test.sh on `program` in a fresh box; its scores.json, read back."""
        root: TrialRoot | None = None
        try:
            if self.work_dir is not None:
                self.work_dir.mkdir(parents=True, exist_ok=True)
            root = TrialRoot(self.work_dir)
            with UserNamespace(root.uids.start, BLOCK) as namespace:
                logs = self._prepare(root, program)
                result = self._run(root, namespace)
            scores = logs / SCORES_FILE
            if not scores.is_file():
                last = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
                why = last.splitlines()[-1] if last else f"status {result.status.value}"
                raise ScorerUnavailable(f"the task's grader wrote no scores: {why}")
            return read_scores(scores)
        except (SandboxError, CheckerError, TrialRootError, OSError) as exc:
            raise ScorerUnavailable(f"the task's grader failed: {exc}") from None
        finally:
            if root is not None:
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
        # The image's WORKDIR, where the verifier's exec starts (atoll-local makes it likewise).
        top = root.ensure_top(top_level(self.phase.workdir))
        workdir = root.fs.joinpath(*PurePosixPath(self.phase.workdir).parts[1:])
        if not workdir.exists():
            workdir.mkdir(parents=True)
            root.chown_tree(top, owner)
        return logs

    def _run(self, root: TrialRoot, namespace: UserNamespace) -> SandboxResult:
        spec = box_spec(
            root,
            root.root_user,
            cwd=self.phase.workdir,
            limits=box_limits(
                timeout_sec=self.phase.timeout_s,
                memory_mb=self.phase.memory_mb,
                cpus=self.phase.cpus,
            ),
            user_namespace=namespace.path,
            network=Network.NONE,
            image_env=dict(self.phase.image_env),
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
    with _owned(work_dir):
        try:
            scorer.check()
            yield scorer
        finally:
            scorer.close()


@contextmanager
def _owned(work_dir: Path | None) -> Iterator[None]:
    """Hold the work dir's lock while the scorer is open; first remove a killed run's roots.

    Each grading's root is removed when it ends, so a root left in the work
    dir is one a killed scorer left. Only the holder of the lock removes them,
    and only the roots directly in this work dir: a second scorer opened on the
    same dir (which waits for nothing and cleans nothing) never loses a
    grading in flight.
    """
    if work_dir is None:
        yield
        return
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
        lock = run_lock.try_acquire(work_dir / WORK_LOCK)
    except OSError as exc:
        raise ScorerUnavailable(f"the checker scorer cannot use {work_dir}: {exc}") from None
    if lock is None:  # another scorer holds this dir: its roots are its own
        yield
        return
    with lock:
        remove_stale_roots(work_dir)
        yield


def remove_stale_roots(work_dir: Path) -> list[Path]:
    """Remove the grading roots (`atoll-local-*` folders) directly in `work_dir`; those removed."""
    removed = []
    for entry in sorted(work_dir.glob(ROOT_PREFIX + "*")):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
