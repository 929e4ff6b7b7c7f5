"""One candidate through a task's own verifier, in a box built the way `atoll-local` builds a trial's.

A search must score each candidate exactly as the task's verifier will score
the program the trial hands in, or it optimizes a number the trial never
reports. So the scorers that grade with a task's own files (`checker`,
`verifier`) run its `tests/test.sh` here: a private root on the host whose
/tests, /workspace and /logs are fresh directories, a user namespace whose
root is the verifier (the verifier phase runs as root) and whose other ids are
unprivileged host ids, no network, and the limits task.toml gives the verifier
phase (its timeout, the environment's memory and CPUs). What the verifier left
in /logs/verifier is read back before the root is removed.

A box that would not start, a root that cannot be made, or a sandbox failure
is `ScorerUnavailable`: the machine is at fault, never the candidate.
"""

from __future__ import annotations

import os
import shutil
import threading
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TypeVar

from atoll.core import run_lock
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
from atoll.core.scoring import ScorerUnavailable

__all__ = [
    "DEFAULT_VERIFIER_TIMEOUT_S",
    "TEST_SCRIPT",
    "VERIFIER_LOGS",
    "WORK_LOCK",
    "VerifierBox",
    "last_line",
    "VerifierPhase",
    "owned",
    "remove_stale_roots",
]

TESTS = "tests"
TEST_SCRIPT = "/tests/test.sh"
VERIFIER_LOGS = "/logs/verifier"
# What a verifier phase gets when task.toml says nothing (Harbor's defaults).
DEFAULT_VERIFIER_TIMEOUT_S = 600.0
WORK_LOCK = ".checker.lock"

T = TypeVar("T")


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


class VerifierBox:
    """Runs one task's `tests/test.sh` on a program, one fresh box per program.

    The program is handed in as `/workspace/<submission_name>` (in the image's
    working directory's place, as a trial's would be). At most
    `VerifierPhase.concurrency` boxes run at once (callers wait their turn), so
    a candidate's score does not depend on how many others run beside it.
    """

    def __init__(
        self,
        task_dir: Path,
        submission_name: str,
        *,
        scorer: str,
        verifier: str = "the task's verifier",
        work_dir: Path | None = None,
    ) -> None:
        self.task_dir = Path(task_dir)
        self.tests_dir = self.task_dir / TESTS
        if not (self.tests_dir / "test.sh").is_file():
            raise ValueError(
                f"{self.tests_dir / 'test.sh'}: missing; the {scorer} scorer grades with the "
                "task's own verifier script"
            )
        self.submission_name = submission_name
        self.scorer = scorer  # names the scorer in its errors
        self.verifier = verifier  # what runs in the box, in its errors
        self.phase = VerifierPhase.of(self.task_dir)
        self.work_dir = work_dir
        self._backend = get_backend("bwrap")
        # Callers take a slot around each grading (see `run`).
        self.slots = threading.BoundedSemaphore(self.phase.concurrency)
        self._closed = False
        self._lock = threading.Lock()
        self._active: set[CancelToken] = set()

    def check(self) -> None:
        """The sandbox works here."""
        try:
            self._backend.check()
        except SandboxError as exc:
            raise ScorerUnavailable(f"the {self.scorer} scorer cannot run here: {exc}") from None

    def close(self) -> None:
        """Stop every box in flight (each then fails as unavailable) and refuse new ones."""
        with self._lock:
            self._closed = True
            active = list(self._active)
        for token in active:
            token.cancel()

    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, program: str, read: Callable[[Path, SandboxResult], T]) -> T:
        """Verify `program` in a fresh box; `read(logs_dir, result)`'s value.

        `read` sees the box's /logs/verifier on the host and the verifier's
        exit; it runs before the root is removed. Any failure to build or run
        the box is ScorerUnavailable; `read` raises what its reading calls for.
        The caller holds one of `slots` around it, so that no more boxes run
        than the host has CPUs for.
        """
        if self._closed:
            raise ScorerUnavailable(f"the {self.scorer} scorer is closed")
        root: TrialRoot | None = None
        try:
            if self.work_dir is not None:
                self.work_dir.mkdir(parents=True, exist_ok=True)
            root = TrialRoot(self.work_dir)
            with UserNamespace(root.uids.start, BLOCK) as namespace:
                logs = self._prepare(root, program)
                result = self._exec(root, namespace)
            return read(logs, result)
        except (SandboxError, TrialRootError, OSError) as exc:
            raise ScorerUnavailable(f"{self.verifier} failed: {exc}") from None
        finally:
            if root is not None:
                root.remove()

    def _prepare(self, root: TrialRoot, program: str) -> Path:
        """/tests (a copy of the task's), /workspace/<program> and /logs/verifier, as in a trial."""
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

    def _exec(self, root: TrialRoot, namespace: UserNamespace) -> SandboxResult:
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
                    raise ScorerUnavailable(f"the {self.scorer} scorer is closed")
                self._active.add(token)
            try:
                return self._backend.run(["sh", TEST_SCRIPT], spec, cancel=token)
            finally:
                with self._lock:
                    self._active.discard(token)


def last_line(result: SandboxResult) -> str:
    """The verifier's last line of output (stderr first), or its exit status: why it failed."""
    last = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
    return last.splitlines()[-1] if last else f"status {result.status.value}"


@contextmanager
def owned(work_dir: Path | None, scorer: str) -> Iterator[None]:
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
        raise ScorerUnavailable(f"the {scorer} scorer cannot use {work_dir}: {exc}") from None
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
