"""Running conformance checks against a backend, one at a time, each followed by a leftover audit.

No test framework is needed: a check is a function that raises
`CheckFailed` (through `expect`) when the backend misbehaves, and
`run_check` turns what happened into a `CheckResult`. `expect` is used
rather than `assert`, so that `python -O` cannot silently pass a backend.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from atoll.core.mounts import mount_points
from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.conformance import audit
from atoll.core.sandbox.spec import Limits, SandboxError, SandboxResult, SandboxSpec
from atoll.core.sizes import MiB

# In-box paths the checks mount onto; a mount left at one of them on the host is a leak.
BOX_PATHS = ("/data", "/box-ro", "/box-work", "/tools", "/app", "/logs")


class CheckFailed(Exception):
    """The backend did something the contract forbids (not a failure of the suite itself)."""


class CheckSkipped(Exception):
    """The check cannot be set up on this machine (it needs root, say)."""


class CheckNotApplicable(Exception):
    """The check is about a feature this backend does not claim (pipes, say)."""


def expect(condition: object, message: str) -> None:
    """Fail the running check with `message` unless `condition` holds."""
    if not condition:
        raise CheckFailed(message)


def skip(reason: str) -> None:
    """End the running check: this machine lacks what it needs."""
    raise CheckSkipped(reason)


def not_applicable(reason: str) -> None:
    """End the running check: it is about something this backend does not claim to do."""
    raise CheckNotApplicable(reason)


def describe(result: SandboxResult) -> str:
    """One line about a run, for a failure message."""
    stderr = result.stderr[:200].decode(errors="replace").strip()
    return (
        f"status={result.status.value} exit={result.exit_code} signal={result.signal} "
        f"wall={result.wall_seconds:.2f}s cpu={result.cpu_seconds:.2f}s "
        f"peak={result.peak_memory_bytes // MiB}MiB stdout={result.stdout[:80]!r} "
        f"stderr={stderr!r}"
    )


def default_uid() -> int:
    """A uid no account uses, distinct per process, so that two suites never audit each other."""
    return 61000 + os.getpid() % 3000


@dataclass(frozen=True)
class Box:
    """What a check works with: the backend, a strict spec for the check's uid, a host directory.

    `scratch` is a fresh host directory (owned by the host user, removed
    after the check); nothing of it is in the box unless the check mounts it.
    """

    backend: SandboxBackend
    uid: int
    scratch: Path
    spec: SandboxSpec

    def limited(self, **changes: Any) -> SandboxSpec:
        """The box's spec with some limits changed."""
        return dataclasses.replace(
            self.spec, limits=dataclasses.replace(self.spec.limits, **changes)
        )

    def mounting(self, *mounts: Any, **changes: Any) -> SandboxSpec:
        """The box's spec with `mounts` (and any other fields changed)."""
        return dataclasses.replace(self.spec, mounts=tuple(mounts), **changes)

    def run(
        self, argv: Sequence[str], spec: SandboxSpec | None = None, **kwargs: Any
    ) -> SandboxResult:
        return self.backend.run(argv, spec or self.spec, **kwargs)


def strict_spec(uid: int) -> SandboxSpec:
    """The spec every check starts from: the check's uid, no network, tight limits."""
    return SandboxSpec(
        uid=uid,
        gid=uid,
        limits=Limits(cpu_seconds=5, wall_seconds=10, memory_bytes=256 * MiB),
    )


@dataclass(frozen=True)
class Check:
    """One thing every backend must do: `run(box)` raises CheckFailed if this one does not."""

    name: str
    run: Callable[[Box], None] = field(repr=False)
    topic: str = ""

    @property
    def summary(self) -> str:
        """The first line of the check function's docstring."""
        return (self.run.__doc__ or self.name).strip().splitlines()[0]


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # the backend broke the contract
    ERROR = "error"  # the sandbox (or the suite) failed, so the check could not tell
    SKIPPED = "skipped"  # cannot be set up on this machine (needs root, say)
    NOT_APPLICABLE = "not_applicable"  # about a feature this backend does not claim


@dataclass(frozen=True)
class CheckResult:
    name: str
    outcome: Outcome
    detail: str
    seconds: float

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "outcome": self.outcome.value,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class SuiteReport:
    backend: str
    uid: int
    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        """No check failed or errored (a skipped one could not be set up here)."""
        return not any(r.outcome in (Outcome.FAILED, Outcome.ERROR) for r in self.results)

    def counts(self) -> dict[str, int]:
        return {o.value: sum(r.outcome is o for r in self.results) for o in Outcome}

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "uid": self.uid,
            "ok": self.ok,
            "counts": self.counts(),
            "results": [r.to_json() for r in self.results],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2)


def run_check(backend: SandboxBackend, check: Check, *, uid: int | None = None) -> CheckResult:
    """Run one check in a fresh scratch directory, then audit what it left behind.

    Leftovers (a process of the uid, a backend leftover, a new mount at a
    path the checks use) fail the check even when it otherwise passed.
    """
    uid = default_uid() if uid is None else uid
    scratch = Path(tempfile.mkdtemp(prefix=f"atoll-conformance-{check.name}-"))
    scratch.chmod(0o755)  # reachable by the check's uid, so a box that shows the host is caught
    mounts_before = mount_points()
    started = time.monotonic()
    outcome, detail = Outcome.PASSED, ""
    try:
        check.run(Box(backend, uid, scratch, strict_spec(uid)))
    except CheckFailed as exc:
        outcome, detail = Outcome.FAILED, str(exc)
    except CheckSkipped as exc:
        outcome, detail = Outcome.SKIPPED, str(exc)
    except CheckNotApplicable as exc:
        outcome, detail = Outcome.NOT_APPLICABLE, str(exc)
    except SandboxError as exc:
        outcome, detail = Outcome.ERROR, f"the sandbox failed: {exc}"
    except Exception as exc:  # a bug in a backend shows as any exception; report, go on
        where = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})"
        outcome = Outcome.ERROR
    seconds = time.monotonic() - started
    try:
        left = audit.leftovers(backend, uid, mounts_before, (str(scratch), *BOX_PATHS))
    except Exception as exc:
        left = [f"the leftover audit failed: {type(exc).__name__}: {exc}"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if left:
        detail = "; ".join(filter(None, [detail, *left]))
        if outcome not in (Outcome.FAILED, Outcome.ERROR):
            outcome = Outcome.FAILED
    return CheckResult(check.name, outcome, detail, seconds)


BackendFactory = Callable[[], SandboxBackend]


def run_checks(
    factory: BackendFactory | SandboxBackend,
    checks: Iterable[Check],
    *,
    uid: int | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> SuiteReport:
    """Run `checks` against the backend `factory` makes (or a backend itself), one after another.

    The backend's own `check()` runs first: a SandboxError from it (the
    backend cannot work on this machine at all) propagates, with its fix.
    """
    if isinstance(factory, SandboxBackend):
        backend = factory
    else:
        try:
            backend = factory()
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(f"{factory!r} could not make a backend: {exc}") from exc
    if not isinstance(backend, SandboxBackend):
        made = type(backend).__name__
        raise SandboxError(f"{factory!r} made a {made}, which is not a SandboxBackend")
    backend.check()
    uid = default_uid() if uid is None else uid
    results = []
    for check in checks:
        result = run_check(backend, check, uid=uid)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return SuiteReport(backend.name or type(backend).__name__, uid, tuple(results))
