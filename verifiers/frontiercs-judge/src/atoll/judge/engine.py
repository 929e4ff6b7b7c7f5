"""Judge one submission: compile (cached), run every case in the sandbox in parallel, check.

The answer has the authoritative judge's JSON shape (`status`, `passed`,
`result`, `score`, `scoreUnbounded`, `cases`), with two deliberate
differences: a case's status says why it failed (time, memory, output, crash,
format, the checker's verdict) instead of "Wrong Answer", and a failing
program's own output is never searched for a score.

A case is judged one of three ways: atoll's own Python checker reads the
program's output; a FrontierCS checkout's testlib checker runs as
`chk in.txt out.txt ans.txt` in its own sandbox with the authority's checker
limits; or the program and the checkout's interactor (`interactor in.txt
tout.txt ans.txt`) run at once, each one's stdout the other's stdin, each
held to its own limits. The score is 100 x the mean case ratio, as there.
Cases run in parallel, `workers` busy processes at a time, a dialogue counting
two (its program and its interactor), so that dialogues do not stretch each
other's wall time. Programs, checkers and interactors run in sandbox sessions
(a box prepared once, each run in a private copy of it with its own limits:
see `atoll.core.sandbox.session`), which spares each case the cost of
building a box; a case sees nothing of the cases before it.

A failure of the judge itself (sandbox broken, compiler missing, a checker
or interactor that does not compile, crosses its own limits, or cannot be
started) raises JudgeInfrastructureError: it is never turned into a score.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["CaseOutcome", "Engine", "JudgeInfrastructureError", "JudgeStopped", "UnknownProblem"]

from atoll.core.sandbox import (
    Limits,
    Mount,
    Network,
    Pipes,
    SandboxBackend,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    SessionPool,
    Status,
    get_backend,
)
from atoll.judge import testlib_message
from atoll.judge.case_outcome import CaseOutcome
from atoll.judge.compiler import (
    COMPILE_BOX,
    COMPILE_LIMITS,
    COMPILE_SLOTS,
    CompileCache,
    Compiled,
    CompileError,
    CompilerMissing,
    cache_key,
    prefix_cache,
    tool_recipe,
)
from atoll.judge.problems import Case, Mode, Problem
from atoll.judge.run_limits import (
    CHECKER_LIMITS,
    interactor_limits,
    run_limits,
)
from atoll.judge.submission_result import CompileInfo, compile_error, result_of
from atoll.judge.verdict import CaseStatus, CheckResult, testlib_status
from atoll.judge.warming import Warming
from atoll.judge.worker_budget import WorkerBudget

MESSAGE_CAP = 512
# Processes a case keeps busy: a dialogue's program and interactor answer each other.
DIALOGUE_UNITS = 2
PROGRAM = "/judge/solution"  # where a case's spec mounts the compiled program
TOOL_DIR = "/checker"  # where the compiled checker or interactor is mounted
CASE_DIR = "/case"  # the tool's working directory: in.txt, out.txt (or tout.txt), ans.txt
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C"}
# The boxes programs and tools run in; what differs per case is mounted per run.
PROGRAM_BOX = SandboxSpec(workdir="/tmp", env=ENV, network=Network.NONE)
TOOL_BOX = SandboxSpec(workdir=CASE_DIR, env=ENV, network=Network.NONE)
PROGRAM_SLOTS = ("/judge",)
TOOL_SLOTS = (CASE_DIR, TOOL_DIR)

# What the C++ runtime prints when `new` fails: the usual face of the memory limit.
_ALLOCATION_FAILED = b"std::bad_alloc"

_SANDBOX_STATUS = {
    Status.RUNTIME_ERROR: CaseStatus.RUNTIME_ERROR,
    Status.CPU_TIME_LIMIT: CaseStatus.CPU_TIME_LIMIT,
    Status.WALL_TIME_LIMIT: CaseStatus.WALL_TIME_LIMIT,
    Status.MEMORY_LIMIT: CaseStatus.MEMORY_LIMIT,
    Status.OUTPUT_LIMIT: CaseStatus.OUTPUT_LIMIT,
}
_OVER_ITS_LIMITS = (
    Status.CPU_TIME_LIMIT,
    Status.WALL_TIME_LIMIT,
    Status.MEMORY_LIMIT,
    Status.OUTPUT_LIMIT,
)


class JudgeInfrastructureError(Exception):
    """The judge could not judge (not the program's fault); never a score."""


class JudgeStopped(Exception):
    """The judge is stopping: the submission it was judging is left unfinished, never scored.

    A restarted judge judges it again, as after a crash (see `JudgeService.start`).
    """


class UnknownProblem(LookupError):
    def __init__(self, pid: str, known: list[str]) -> None:
        super().__init__(f"unknown problem {pid!r}; known problems: {', '.join(sorted(known))}")


def _program_message(
    status: CaseStatus, exit_code: int | None, signal: int | None, stderr: bytes
) -> str:
    how = status.value
    if signal is not None:
        how += f" (signal {signal})"
    elif exit_code not in (None, 0):
        how += f" (exit code {exit_code})"
    tail = stderr[-MESSAGE_CAP:].decode("utf-8", errors="replace").strip()
    return f"{how}; stderr: {tail}" if tail else how


class Engine:
    """Compiles and judges submissions; safe to call from several threads."""

    def __init__(
        self,
        problems: dict[str, Problem],
        state_dir: Path,
        workers: int | None = None,
        backend: str = "bwrap",
    ) -> None:
        self.problems = problems
        self.workers = workers or os.cpu_count() or 1
        try:
            self.backend: SandboxBackend = get_backend(backend)
            self.backend.check()
        except SandboxError as exc:
            raise JudgeInfrastructureError(f"sandbox unusable: {exc}") from exc
        self._programs = SessionPool(self.backend, PROGRAM_BOX, PROGRAM_SLOTS)
        self._tools = SessionPool(self.backend, TOOL_BOX, TOOL_SLOTS)
        self._compiles = SessionPool(self.backend, COMPILE_BOX, COMPILE_SLOTS)
        self._check_limits()
        # The precompiled headers are this machine's own: not those a Docker image compiles with.
        prefixes = (
            prefix_cache(state_dir / "prefixes", self._compiles) if backend == "bwrap" else None
        )
        self.compile_cache = CompileCache(
            state_dir / "binaries", self.backend, self._compiles, prefixes
        )
        self.tool_cache = CompileCache(state_dir / "checkers", self.backend, self._compiles)
        self._tool_failures: dict[str, str] = {}
        self._tool_guard = threading.Lock()
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="judge-case")
        self._stopping = threading.Event()
        # `workers` processes at a time, a dialogue counting two (see worker_budget).
        self._budget = WorkerBudget(self.workers)
        # An interactor runs beside its program: never in the pool its program waits in.
        self._partners = ThreadPoolExecutor(self.workers, thread_name_prefix="judge-partner")
        self._warming = Warming(self._programs, self._tools, self.workers, prefixes)

    def stop(self) -> None:
        """Start no further case: a submission being judged ends in `JudgeStopped` once the
        cases already running are done, so that stopping waits for a case, not a submission.
        """
        self._stopping.set()

    def close(self) -> None:
        self.stop()
        self._warming.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.compile_cache.close()  # its fresh builds, published; the sessions are ours
        self.tool_cache.close()
        self._partners.shutdown(wait=False, cancel_futures=True)
        self._programs.close()
        self._tools.close()
        self._compiles.close()

    def _check_limits(self) -> None:
        """Refuse to start where the run limits cannot be set: every case would fail.

        Each set of limits is tried in the box its runs use, which also opens
        the first session of each kind (and the compiler's) before the first
        submission arrives.
        """
        needed: dict[tuple[Limits, SessionPool], str] = {
            (COMPILE_LIMITS, self._compiles): "the compiler"
        }
        for problem in self.problems.values():
            interactive = problem.mode is Mode.INTERACTIVE
            for case in problem.cases:
                needed.setdefault(
                    (run_limits(case.limits, interactive), self._programs), f"problem {problem.id}"
                )
                if problem.tool is not None:
                    tool = interactor_limits(case.limits) if interactive else CHECKER_LIMITS
                    needed.setdefault((tool, self._tools), f"problem {problem.id}")
        for (limits, pool), who in needed.items():
            try:
                with pool.lease() as box:
                    result = box.run(["/bin/echo", "limits-set"], limits)
            except SandboxError as exc:
                raise JudgeInfrastructureError(f"sandbox unusable: {exc}") from exc
            if result.stdout.strip() != b"limits-set":
                raise JudgeInfrastructureError(
                    f"cannot set {who}'s stack and address-space limits in "
                    f"the sandbox: {result.stderr.decode(errors='replace').strip()}"
                )

    def problem(self, pid: str) -> Problem:
        try:
            return self.problems[pid]
        except KeyError:
            raise UnknownProblem(pid, list(self.problems)) from None

    def judge(self, pid: str, source: bytes) -> dict[str, Any]:
        """The final result for one submission (`done`, or `error` for a compile failure)."""
        problem = self.problem(pid)
        if self._stopping.is_set():
            raise JudgeStopped(f"the judge stopped before judging a submission to problem {pid}")
        started = time.perf_counter()
        with self._warming.judging(refill=problem):
            # What the last refill left of the cases' sandboxes is made ready while the
            # program compiles (see `warming`).
            warming = None if self.compile_cache.cached(source) else self._warming.start(problem)
            try:
                built = self._compile(problem, source)
            except CompileError as exc:
                return compile_error(str(exc))
            finally:
                self._warming.wait(warming)
            tool, compiled = built
            try:
                cases = self._run_cases(problem, compiled.binary, tool)
            finally:
                for binary in (tool, compiled):
                    if binary is not None:
                        binary.release()
        return result_of(cases, _compile_info(compiled, tool), started)

    def wait_idle(self, timeout_s: float) -> bool:
        """Until the judge has nothing under way: no submission judged, no sandbox readied
        for the next (False if `timeout_s` passed first). For a caller about to time other
        work on the same cores."""
        return self._warming.wait_idle(timeout_s)

    def prepare(self, pid: str, source: bytes) -> CompileInfo:
        """Compile a submission and its problem's checker here ahead of its cases (cached).

        CompileError when the program does not compile; what a machine of a
        cluster does first, so that the cases it is sent find the binaries.
        """
        with self._warming.judging():
            tool, compiled = self._compile(self.problem(pid), source)
        for binary in (tool, compiled):
            if binary is not None:
                binary.release()
        return _compile_info(compiled, tool)

    def judge_case(self, pid: str, source: bytes, index: int) -> CaseOutcome:
        """One case of a submission (0-based `index`), compiling first unless cached.

        The unit of work a machine of a cluster is sent; the same run, sandbox
        and check as a case of `judge`.
        """
        problem = self.problem(pid)
        with self._warming.judging():
            tool, compiled = self._compile(problem, source)
            try:
                return self._run_cases(problem, compiled.binary, tool, [index])[0]
            finally:
                for binary in (tool, compiled):
                    if binary is not None:
                        binary.release()

    def _compile(self, problem: Problem, source: bytes) -> tuple[Compiled | None, Compiled]:
        """The problem's tool (the judge's part first: its failure is no score) and the program."""
        tool = self.compile_tool(problem)
        try:
            return tool, self.compile_cache.compile(source)
        except CompileError:
            if tool is not None:
                tool.release()
            raise
        except (SandboxError, CompilerMissing, OSError) as exc:
            if tool is not None:
                tool.release()
            raise JudgeInfrastructureError(f"cannot compile: {exc}") from exc

    def _run_cases(
        self,
        problem: Problem,
        binary: Path,
        tool: Compiled | None,
        indices: list[int] | None = None,
    ) -> list[CaseOutcome]:
        """Every case (or those of `indices`), in parallel within the worker budget."""
        wanted = range(len(problem.cases)) if indices is None else indices
        futures = [
            self._pool.submit(self._run_case, problem, binary, tool, index) for index in wanted
        ]
        try:
            return [future.result() for future in futures]
        except (SandboxError, OSError, ValueError, JudgeInfrastructureError, JudgeStopped) as exc:
            for future in futures:
                future.cancel()
            if isinstance(exc, JudgeInfrastructureError | JudgeStopped):
                raise
            raise JudgeInfrastructureError(f"cannot run the cases: {exc}") from exc

    def compile_tool(self, problem: Problem) -> Compiled | None:
        """The problem's checker or interactor binary (cached by hash), None for a Python checker.

        A tool that does not compile is the judge's failure, never the
        program's: JudgeInfrastructureError, remembered so that the next
        submission does not pay for the same failed compile.
        """
        if problem.tool is None:
            return None
        what = f"the {problem.tool.role} of problem {problem.id} ({problem.tool.source})"
        try:
            source = problem.tool.source.read_bytes()
        except OSError as exc:
            raise JudgeInfrastructureError(f"cannot read {what}: {exc.strerror}") from exc
        recipe = tool_recipe(problem.tool.role, problem.tool.include_dir)
        try:
            key = cache_key(source, recipe)
            with self._tool_guard:
                failed = self._tool_failures.get(key)
            if failed is not None:
                raise JudgeInfrastructureError(failed)
            return self.tool_cache.compile(source, recipe)
        except CompileError as exc:
            message = f"{what} does not compile: {exc}"
            with self._tool_guard:
                self._tool_failures[key] = message
            raise JudgeInfrastructureError(message) from exc
        except (SandboxError, CompilerMissing, OSError) as exc:
            raise JudgeInfrastructureError(f"cannot compile {what}: {exc}") from exc

    def _run_case(
        self, problem: Problem, binary: Path, tool: Compiled | None, index: int
    ) -> CaseOutcome:
        if self._stopping.is_set():
            raise JudgeStopped(f"the judge stopped before case {index + 1} of problem {problem.id}")
        if problem.mode is Mode.INTERACTIVE:
            assert tool is not None
            with self._budget.held(DIALOGUE_UNITS):
                return self._interact(problem, binary, tool.binary, index)
        with self._budget.held(1):
            return self._run_checked(problem, binary, tool, index)

    def _run_checked(
        self, problem: Problem, binary: Path, tool: Compiled | None, index: int
    ) -> CaseOutcome:
        """The program on the case's input, then atoll's checker or the checkout's."""
        case = problem.cases[index]
        with self._programs.lease() as box:
            result = box.run(
                [PROGRAM],
                run_limits(case.limits),
                problem.case_input(index),
                mounts=(Mount(binary.parent, "/judge"),),
                # The authority's go-judge copies the input into a memfd: a program may size,
                # map or seek its stdin (`seekg`/`tellg`, `fstat`, `mmap`), as on a file.
                stdin_seekable=True,
            )
        failed = _program_failure(index + 1, result)
        if failed is not None:
            return failed
        if tool is not None:
            return self._testlib_check(problem, tool.binary, index, result)
        check_started = time.perf_counter()
        verdict: CheckResult = problem.check(index, result.stdout)
        check_seconds = time.perf_counter() - check_started
        ratio = verdict.ratio if verdict.ok else 0.0
        return CaseOutcome(
            index + 1,
            verdict.status,
            ratio,
            ratio,
            result.cpu_seconds,
            result.wall_seconds,
            result.peak_memory_bytes,
            check_seconds,
            verdict.message,
        )

    def _testlib_check(
        self, problem: Problem, checker: Path, index: int, run: SandboxResult
    ) -> CaseOutcome:
        """`chk in.txt out.txt ans.txt` on the program's output, judged as the authority does."""
        case = problem.cases[index]
        with _case_dir() as work:
            out = work / "out.txt"
            out.write_bytes(run.stdout)
            out.chmod(0o644)
            started = time.perf_counter()
            with self._tools.lease() as box:
                checked = box.run(
                    [f"{TOOL_DIR}/{checker.name}", "in.txt", "out.txt", "ans.txt"],
                    CHECKER_LIMITS,
                    mounts=_tool_mounts(work, case, checker),
                )
            check_seconds = time.perf_counter() - started
        _refuse_tool_over_limits(problem, "checker", index + 1, checked)
        status, text = _tool_verdict(
            checked, testlib_message.message(checked.stdout, checked.stderr)
        )
        ratio, unbounded = testlib_message.ratios_from_testlib_message(
            text, accepted=status is CaseStatus.OK
        )
        return CaseOutcome(
            index + 1,
            status,
            ratio,
            unbounded,
            run.cpu_seconds,
            run.wall_seconds,
            run.peak_memory_bytes,
            check_seconds,
            testlib_message.shorten(text),
        )

    def _interact(
        self, problem: Problem, binary: Path, interactor: Path, index: int
    ) -> CaseOutcome:
        """The program and the interactor at once, joined by two pipes, each in its own box."""
        case = problem.cases[index]
        number = index + 1
        with _case_dir() as work:
            to_program, from_interactor = os.pipe()
            to_interactor, from_program = os.pipe()
            started = time.perf_counter()
            partner = self._partners.submit(
                self._run_tool,
                [f"{TOOL_DIR}/{interactor.name}", "in.txt", "tout.txt", "ans.txt"],
                interactor_limits(case.limits),
                _tool_mounts(work, case, interactor),
                Pipes(to_interactor, from_interactor),
            )
            program_pipes = Pipes(to_program, from_program)
            try:
                with self._programs.lease() as box:
                    program = box.run(
                        [PROGRAM],
                        run_limits(case.limits, interactive=True),
                        mounts=(Mount(binary.parent, "/judge"),),
                        pipes=program_pipes,
                    )
            finally:
                program_pipes.close()  # idempotent: if the run never started, end the dialogue
                talked = partner.result()  # ends once the program's side of the pipes closed
            check_seconds = time.perf_counter() - started
        text = talked.stderr.decode("utf-8", errors="replace")
        failed = _program_failure(number, program)
        if failed is not None:
            if program.signal == signal.SIGPIPE:
                failed = _with_message(
                    failed, f"{failed.message}; the interactor had stopped reading: {text}"
                )
            return failed
        _refuse_tool_over_limits(problem, "interactor", number, talked)
        if talked.signal == signal.SIGPIPE:
            status = CaseStatus.WRONG_ANSWER
            text = f"the program stopped reading while the interactor was writing; {text}"
        else:
            status, text = _tool_verdict(talked, text)
        ratio, unbounded = testlib_message.ratios_from_testlib_message(
            text, accepted=status is CaseStatus.OK
        )
        return CaseOutcome(
            number,
            status,
            ratio,
            unbounded,
            program.cpu_seconds,
            program.wall_seconds,
            program.peak_memory_bytes,
            check_seconds,
            testlib_message.shorten(text),
        )

    def _run_tool(
        self, argv: list[str], limits: Limits, mounts: tuple[Mount, ...], pipes: Pipes
    ) -> SandboxResult:
        """An interactor's run, in a tool box of its own beside its program's."""
        try:
            with self._tools.lease() as box:
                return box.run(argv, limits, mounts=mounts, pipes=pipes)
        except BaseException:
            pipes.close()  # idempotent: the program must see the dialogue end
            raise


def _program_failure(number: int, result: SandboxResult) -> CaseOutcome | None:
    """The outcome of a program that crashed or crossed a limit (ratio 0), else None."""
    status = _SANDBOX_STATUS.get(result.status)
    if status is CaseStatus.RUNTIME_ERROR and _ALLOCATION_FAILED in result.stderr:
        # Under the address-space limit an allocation fails before the memory is
        # used; this only names the failure, the case scores 0 either way.
        status = CaseStatus.MEMORY_LIMIT
    if status is None and result.stdout_truncated:
        status = CaseStatus.OUTPUT_LIMIT
    if status is None:
        return None
    return CaseOutcome(
        number,
        status,
        0.0,
        0.0,
        result.cpu_seconds,
        result.wall_seconds,
        result.peak_memory_bytes,
        0.0,
        _program_message(status, result.exit_code, result.signal, result.stderr),
    )


def _with_message(outcome: CaseOutcome, message: str) -> CaseOutcome:
    return CaseOutcome(
        outcome.number,
        outcome.status,
        outcome.ratio,
        outcome.unbounded,
        outcome.cpu_seconds,
        outcome.wall_seconds,
        outcome.memory_bytes,
        outcome.check_seconds,
        testlib_message.shorten(message),
    )


def _tool_verdict(result: SandboxResult, text: str) -> tuple[CaseStatus, str]:
    """A checker's or interactor's verdict from how it exited (limits already refused)."""
    if result.signal is not None:
        return CaseStatus.CHECKER_FAIL, f"killed by signal {result.signal}; {text}".strip()
    return testlib_status(result.exit_code or 0), text


def _refuse_tool_over_limits(
    problem: Problem, role: str, number: int, result: SandboxResult
) -> None:
    """A checker or interactor stopped for its own limits is the judge's failure, not a score."""
    if result.status in _OVER_ITS_LIMITS:
        raise JudgeInfrastructureError(
            f"the {role} of problem {problem.id} exceeded its own limits on case {number} "
            f"({result.status.value}); the submission was not scored"
        )


def _tool_mounts(work: Path, case: Case, tool: Path) -> tuple[Mount, ...]:
    """The tool's working directory, with the case's input and answer as in.txt and ans.txt."""
    if case.answer is None:
        raise ValueError("a case judged by a compiled checker needs an answer file")
    return (
        Mount(work, CASE_DIR, writable=True),
        Mount(case.input, f"{CASE_DIR}/in.txt"),
        Mount(case.answer, f"{CASE_DIR}/ans.txt"),
        Mount(tool.parent, TOOL_DIR),
    )


@contextlib.contextmanager
def _case_dir() -> Iterator[Path]:
    """A private scratch directory for one case's files, writable by the sandbox's uid."""
    with tempfile.TemporaryDirectory(prefix="atoll-judge-case-") as tmp:
        path = Path(tmp)
        path.chmod(0o777)  # the tool runs as an unprivileged uid and may write (tout.txt)
        yield path


def _compile_info(compiled: Compiled, tool: Compiled | None) -> CompileInfo:
    if tool is None:
        return CompileInfo(compiled.seconds, compiled.cached)
    return CompileInfo(compiled.seconds, compiled.cached, tool.seconds, tool.cached)
