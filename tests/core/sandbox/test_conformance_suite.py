"""The conformance suite itself: it fails flawed backends, reports, and runs from `atoll sandbox check`.

A suite that passes everything proves nothing, so each flaw a careless
third-party backend could have (flawed_backends.py) must fail the check
written for it, with a message that says what went wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import flawed_backends
import pytest

from atoll.core.sandbox import SandboxError, get_backend
from atoll.core.sandbox.conformance import CHECKS, Outcome, run_check, run_suite, select

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent


@pytest.fixture
def uid(test_uid: int) -> int:
    """A uid of its own: a flawed backend's leftovers must not reach the other tests' audits."""
    return test_uid + 2


@pytest.mark.parametrize(
    ("make", "check", "says"),
    [
        (flawed_backends.on_the_host_network, "host_loopback", "connected to the host"),
        (
            flawed_backends.mounts_everything_writable,
            "writes_outside_mounts",
            "writing /box-ro/keep",
        ),
        (flawed_backends.shows_the_host_tmp, "home_canary", "a host file outside the mounts"),
        (flawed_backends.ClaimsNoPipesButTakesThem, "pipes_refused", "pipes were accepted"),
        (flawed_backends.streams_a_seekable_stdin, "stdin_seekable", "Illegal seek"),
        (flawed_backends.WritableStdinFile, "stdin_seekable", "not seen: write refused"),
    ],
)
def test_a_flawed_backend_fails_its_check(make, check, says, uid) -> None:
    (chosen,) = select([check])
    result = run_check(make(), chosen, uid=uid)
    assert result.outcome is Outcome.FAILED
    assert says in result.detail


def test_a_process_left_behind_fails_a_check_that_otherwise_passes(uid) -> None:
    backend = flawed_backends.LeavesASleeper()
    try:
        result = run_check(backend, select(["plain_run"])[0], uid=uid)
    finally:
        backend.stop_sleepers()
    assert result.outcome is Outcome.FAILED
    assert f"of uid {uid} outlived its run" in result.detail


def test_a_backend_that_raises_is_an_error_and_the_suite_goes_on(uid) -> None:
    report = run_suite(flawed_backends.Crashes, select(["plain_run", "cancel"]), uid=uid)
    assert [r.outcome for r in report.results] == [Outcome.ERROR, Outcome.ERROR]
    assert "RuntimeError: backend bug" in report.results[0].detail
    assert not report.ok
    assert report.to_json()["counts"]["error"] == 2


def test_the_real_backend_passes_and_the_report_says_so(uid) -> None:
    report = run_suite(
        lambda: get_backend("bwrap"), select(["plain_run", "pipes_refused"]), uid=uid
    )
    assert report.ok and report.backend == "bwrap"
    assert [(r.name, r.outcome) for r in report.results] == [
        ("plain_run", Outcome.PASSED),
        ("pipes_refused", Outcome.NOT_APPLICABLE),
    ]


def test_a_backend_that_cannot_work_here_stops_the_suite_with_its_error() -> None:
    class Unusable(flawed_backends.Flawed):
        def check(self) -> None:
            raise SandboxError("install the frobnicator")

    with pytest.raises(SandboxError, match="frobnicator"):
        run_suite(Unusable)


def test_checks_are_named_once_and_unknown_names_are_refused() -> None:
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    with pytest.raises(ValueError, match="no conformance check called fork_bom"):
        select(["fork_bom"])


def _atoll(venv_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), "sandbox", "check", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(HERE), "COLUMNS": "200", "TERM": "dumb"},
    )


@pytest.mark.slow
def test_the_command_checks_a_third_party_backend_by_import_path(venv_bin, test_uid) -> None:
    uid = str(test_uid + 3)
    done = _atoll(
        venv_bin,
        "-b",
        "flawed_backends:on_the_host_network",
        "--uid",
        uid,
        "--only",
        "host_loopback",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed" in done.stdout and "host_loopback" in done.stdout
    assert "does not conform" in done.stdout
    done = _atoll(venv_bin, "-b", "bwrap", "--uid", uid, "--only", "plain_run", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["results"][0]["outcome"] == "passed"


@pytest.mark.parametrize(
    ("backend", "message"),
    [
        ("podman", "unknown sandbox backend 'podman'; known backends: bwrap, docker"),
        ("no_such_module:Backend", "cannot import no_such_module"),
        ("flawed_backends:HERE_NOT", "has no attribute"),
    ],
)
def test_the_command_refuses_a_backend_it_cannot_use_in_one_line(venv_bin, backend, message):
    done = _atoll(venv_bin, "-b", backend)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
