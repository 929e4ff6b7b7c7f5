"""Judge one submission: compile (cached), run every case in the sandbox in parallel, check.

The answer has the authoritative judge's JSON shape (`status`, `passed`,
`result`, `score`, `scoreUnbounded`, `cases`), with two deliberate
differences: a case's status says why it failed (time, memory, output, crash,
format, geometry) instead of "Wrong Answer", and a failing program's own
output is never searched for a score. A failure of the judge itself (sandbox
broken, compiler missing, bad problem data) raises JudgeInfrastructureError:
it is never turned into a score.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.sandbox import (
    Limits,
    Mount,
    Network,
    SandboxBackend,
    SandboxError,
    SandboxSpec,
    Status,
    get_backend,
)
from atoll.core.sandbox.spec import MiB
from atoll.judge.compiler import CompileCache, CompileError, CompilerMissing
from atoll.judge.problems import Problem
from atoll.judge.verdict import CaseStatus, CheckResult

# The authority's caps (stdout 128 MiB, stderr 64 MiB): a program that logs to
# stderr, or pads its answer with whitespace, fares here as it does there.
STDOUT_CAP = 128 * MiB
STDERR_CAP = 64 * MiB
PROCESSES = 128  # the authority's limit; threads count
MESSAGE_CAP = 512
PROGRAM = "/judge/solution"  # where a case's spec mounts the compiled program

# What the C++ runtime prints when `new` fails: the usual face of the memory limit.
_ALLOCATION_FAILED = b"std::bad_alloc"

_SANDBOX_STATUS = {
    Status.RUNTIME_ERROR: CaseStatus.RUNTIME_ERROR,
    Status.CPU_TIME_LIMIT: CaseStatus.CPU_TIME_LIMIT,
    Status.WALL_TIME_LIMIT: CaseStatus.WALL_TIME_LIMIT,
    Status.MEMORY_LIMIT: CaseStatus.MEMORY_LIMIT,
    Status.OUTPUT_LIMIT: CaseStatus.OUTPUT_LIMIT,
}


class JudgeInfrastructureError(Exception):
    """The judge could not judge (not the program's fault); never a score."""


class UnknownProblem(LookupError):
    def __init__(self, pid: str, known: list[str]) -> None:
        super().__init__(f"unknown problem {pid!r}; known problems: {', '.join(sorted(known))}")


@dataclass(frozen=True)
class CaseOutcome:
    number: int  # 1-based, as the test files are named
    status: CaseStatus
    ratio: float
    cpu_seconds: float
    wall_seconds: float
    memory_bytes: int
    check_seconds: float
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.number,
            "ok": self.status is CaseStatus.OK,
            "status": self.status.value,
            "time": round(self.cpu_seconds * 1e9),  # ns, as the authority reports
            "wallTime": round(self.wall_seconds * 1e9),
            "memory": self.memory_bytes,  # bytes
            "checkTime": round(self.check_seconds * 1e9),
            "msg": self.message,
            "scoreRatio": self.ratio,
            "scoreRatioUnbounded": self.ratio,
        }


def run_limits(problem: Problem) -> Limits:
    """The authority's limits for one case.

    The authority sets the stack and the address space to the memory limit:
    the usual 8 MiB stack would crash deep recursions it accepts, and without
    the address-space limit a program that reserves more memory than it
    touches would pass here and fail there.
    """
    return Limits(
        cpu_seconds=problem.limits.cpu_seconds,
        wall_seconds=problem.limits.wall_seconds,
        memory_bytes=problem.limits.memory_bytes,
        processes=PROCESSES,
        file_size_bytes=16 * MiB,
        open_files=64,
        stdout_bytes=STDOUT_CAP,
        stderr_bytes=STDERR_CAP,
        stack_bytes=problem.limits.memory_bytes,
        address_space_bytes=problem.limits.memory_bytes,
    )


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
        self._check_limits()
        self.compile_cache = CompileCache(state_dir / "binaries", self.backend)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="judge-case")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _check_limits(self) -> None:
        """Refuse to start where the run limits cannot be set: every case would fail."""
        for problem in self.problems.values():
            spec = SandboxSpec(network=Network.NONE, limits=run_limits(problem))
            try:
                result = self.backend.run(["/bin/echo", "limits-set"], spec)
            except SandboxError as exc:
                raise JudgeInfrastructureError(f"sandbox unusable: {exc}") from exc
            if result.stdout.strip() != b"limits-set":
                raise JudgeInfrastructureError(
                    f"cannot set problem {problem.id}'s stack and address-space limits in "
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
        started = time.perf_counter()
        try:
            compiled = self.compile_cache.compile(source)
        except CompileError as exc:
            return {"status": "error", "error": f"compile error: {exc}"}
        except (SandboxError, CompilerMissing, OSError) as exc:
            raise JudgeInfrastructureError(f"cannot compile: {exc}") from exc
        futures = [
            self._pool.submit(self._run_case, problem, compiled.binary, index)
            for index in range(len(problem.cases))
        ]
        try:
            cases = [future.result() for future in futures]
        except (SandboxError, OSError, ValueError) as exc:
            for future in futures:
                future.cancel()
            raise JudgeInfrastructureError(f"cannot run the cases: {exc}") from exc
        total = sum(case.ratio for case in cases)
        score = 100.0 * total / len(cases)
        passed = all(case.ratio == 1.0 for case in cases)
        return {
            "status": "done",
            "passed": passed,
            "result": "Correct Answer" if passed else _summary(cases),
            "score": score,
            "scoreUnbounded": score,
            "cases": [case.to_json() for case in cases],
            "judge": {
                "compileSeconds": compiled.seconds,
                "compileCached": compiled.cached,
                "seconds": time.perf_counter() - started,
            },
        }

    def _run_case(self, problem: Problem, binary: Path, index: int) -> CaseOutcome:
        spec = SandboxSpec(
            mounts=(Mount(binary.parent, "/judge"),),
            workdir="/tmp",
            env={"PATH": "/usr/bin:/bin", "LANG": "C"},
            network=Network.NONE,
            limits=run_limits(problem),
        )
        result = self.backend.run([PROGRAM], spec, stdin=problem.case_input(index))
        number = index + 1
        status = _SANDBOX_STATUS.get(result.status)
        if status is CaseStatus.RUNTIME_ERROR and _ALLOCATION_FAILED in result.stderr:
            # Under the address-space limit an allocation fails before the memory is
            # used; this only names the failure, the case scores 0 either way.
            status = CaseStatus.MEMORY_LIMIT
        if status is None and result.stdout_truncated:
            status = CaseStatus.OUTPUT_LIMIT
        if status is not None:
            return CaseOutcome(
                number,
                status,
                0.0,
                result.cpu_seconds,
                result.wall_seconds,
                result.peak_memory_bytes,
                0.0,
                _program_message(status, result.exit_code, result.signal, result.stderr),
            )
        check_started = time.perf_counter()
        verdict: CheckResult = problem.check(index, result.stdout)
        check_seconds = time.perf_counter() - check_started
        return CaseOutcome(
            number,
            verdict.status,
            verdict.ratio if verdict.ok else 0.0,
            result.cpu_seconds,
            result.wall_seconds,
            result.peak_memory_bytes,
            check_seconds,
            verdict.message,
        )


def _summary(cases: list[CaseOutcome]) -> str:
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.status.value] = counts.get(case.status.value, 0) + 1
    return ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
