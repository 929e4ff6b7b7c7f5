"""The adversarial conformance suite every sandbox backend must pass, ours or a third party's.

Hostile programs (a fork bomb, a memory bomb, a CPU spin, a sleeper past the
wall clock, endless output, a connection to the host's loopback, reads of
root-only and host files, writes outside the mounts, a setuid binary,
symlink and `..` escapes, many runs at once, cancel, a seekable stdin that
must not be written, and joined pipes where the backend has them) must each end with the right Status and leave nothing
behind: after every check no process of its uid, no new mount and nothing
from the backend's `leftovers()` may remain.

Run it without a test framework:

    from atoll.core.sandbox.conformance import run_suite
    report = run_suite(MyBackend)  # a class, a factory function or an instance
    print(report.dumps())          # report.ok: no check failed

from the command line (`atoll sandbox check --backend my_pkg.sandbox:MyBackend`),
or from pytest, one test per check:

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
    def test_conforms(check):
        result = run_check(MyBackend(), check)
        if result.outcome in (Outcome.SKIPPED, Outcome.NOT_APPLICABLE):
            pytest.skip(result.detail)
        assert result.passed, result.detail

Two checks need root on the host (to give a mount to the check's uid, and to
make a setuid binary); without it they are skipped, not passed. Checks of a
feature the backend does not claim (`supports_pipes`) are not applicable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.conformance import isolation, limits, pipes, stdin
from atoll.core.sandbox.conformance.suite import (
    BackendFactory,
    Box,
    Check,
    CheckFailed,
    CheckNotApplicable,
    CheckResult,
    CheckSkipped,
    Outcome,
    SuiteReport,
    default_uid,
    expect,
    run_check,
    run_checks,
)


def _checks(topic: str, *functions: Callable[[Box], None]) -> list[Check]:
    return [Check(f.__name__, f, topic) for f in functions]


#: Every check, in the order the suite runs them.
CHECKS: tuple[Check, ...] = (
    *_checks(
        "running",
        limits.plain_run,
        limits.stdin_reaches_the_program,
        stdin.stdin_seekable,
        limits.killed_by_a_signal,
        limits.only_the_declared_environment,
        limits.no_limits,
        limits.parallel_runs,
        limits.cancel,
    ),
    *_checks(
        "limits",
        limits.fork_bomb,
        limits.memory_bomb,
        limits.cpu_spin,
        limits.cpu_spread_over_processes,
        limits.sleep_past_the_wall_clock,
        limits.endless_output,
        limits.file_size_limit,
        limits.open_files_limit,
        limits.stack_and_address_space,
    ),
    *_checks(
        "isolation",
        isolation.host_loopback,
        isolation.root_only_file,
        isolation.home_canary,
        isolation.writes_outside_mounts,
        isolation.setuid_binaries,
        isolation.symlink_escapes,
        isolation.invalid_specs,
    ),
    *_checks(
        "pipes", pipes.pipes_talk, pipes.pipes_deadlock, pipes.pipes_broken, pipes.pipes_refused
    ),
)


def select(names: Iterable[str]) -> tuple[Check, ...]:
    """The checks called `names` (all of them for none); ValueError names an unknown one."""
    wanted = list(names)
    if not wanted:
        return CHECKS
    by_name = {c.name: c for c in CHECKS}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise ValueError(
            f"no conformance check called {', '.join(unknown)}; known checks: {', '.join(by_name)}"
        )
    return tuple(by_name[n] for n in wanted)


def run_suite(
    factory: BackendFactory | SandboxBackend,
    checks: Iterable[Check] = CHECKS,
    *,
    uid: int | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> SuiteReport:
    """Every check (or just `checks`) against the backend `factory` makes, in order.

    `factory` is a backend class, a function returning a backend, or a
    backend. Its `check()` runs first; the SandboxError it raises when the
    backend cannot work here at all propagates. `on_result` sees each result
    as it comes (for progress). Each check runs as `uid` (default: a uid no
    account uses, distinct per process).
    """
    return run_checks(factory, checks, uid=uid, on_result=on_result)


__all__ = [
    "CHECKS",
    "BackendFactory",
    "Box",
    "Check",
    "CheckFailed",
    "CheckNotApplicable",
    "CheckResult",
    "CheckSkipped",
    "Outcome",
    "SuiteReport",
    "default_uid",
    "expect",
    "run_check",
    "run_checks",
    "run_suite",
    "select",
]
