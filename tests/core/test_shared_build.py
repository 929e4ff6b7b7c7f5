"""tests/support/shared_build.py: one build for all the workers of a run, whoever asks first.

The race is between real processes, as between xdist workers: each announces
itself, then asks for the build; the build waits until both have announced,
so the second asks while the first is building.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.shared_build import SharedBuildFailed, run_root, shared_build

TESTS = Path(__file__).parents[1]

WORKER = r"""
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from support.shared_build import shared_build

root, mode = Path(sys.argv[2]), sys.argv[3]
(root / f"ready-{os.getpid()}").touch()

def build(files):
    with open(root / "builds.log", "a") as log:
        log.write(f"{os.getpid()}\n")
    (files / "half.txt").write_text("written before the end")
    if mode == "die":
        os._exit(9)
    deadline = time.monotonic() + 60
    while len(list(root.glob("ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the other process is in the lock's queue by now
    if mode == "fail":
        raise ValueError("the scorer broke")
    (files / "out.txt").write_text(f"built by {os.getpid()}")
    return {"builder": os.getpid(), "items": [1, 2]}

try:
    built = shared_build(root, "race", build)
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
else:
    print(json.dumps({"record": built.record, "files": str(built.files),
                      "out": (built.files / "out.txt").read_text()}))
"""


def _start(root: Path, mode: str = "build") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(TESTS), str(root), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(process: subprocess.Popen[str]) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.splitlines()[-1])


def _builds(root: Path) -> list[str]:
    return (root / "builds.log").read_text().split()


@pytest.mark.slow  # Python processes started and raced
def test_two_processes_racing_build_once_and_read_the_same(tmp_path: Path) -> None:
    first, second = _start(tmp_path), _start(tmp_path)
    results = [_result(first), _result(second)]
    assert len(_builds(tmp_path)) == 1
    (builder,) = _builds(tmp_path)
    assert results[0] == results[1]
    assert results[0]["record"] == {"builder": int(builder), "items": [1, 2]}
    assert results[0]["out"] == f"built by {builder}"
    assert results[0]["files"] == str(tmp_path / "shared-race" / "files")


@pytest.mark.slow  # Python processes started and raced
def test_a_failed_build_fails_the_other_process_with_its_message_unbuilt(tmp_path: Path) -> None:
    first, second = _start(tmp_path, "fail"), _start(tmp_path, "fail")
    results = [_result(first), _result(second)]
    assert len(_builds(tmp_path)) == 1
    (builder,) = _builds(tmp_path)
    assert {r["error"] for r in results} == {"ValueError", "SharedBuildFailed"}
    (relayed,) = [r["message"] for r in results if r["error"] == "SharedBuildFailed"]
    assert "ValueError: the scorer broke" in relayed and f"pid {builder}" in relayed


@pytest.mark.slow  # Python processes started and raced
def test_a_build_whose_process_died_is_built_again_from_nothing(tmp_path: Path) -> None:
    died = _start(tmp_path, "die")
    died.communicate(timeout=120)
    assert died.returncode == 9
    (tmp_path / f"ready-{died.pid}").unlink()
    assert (tmp_path / "shared-race" / "files" / "half.txt").is_file()
    first, second = _start(tmp_path), _start(tmp_path)
    results = [_result(first), _result(second)]
    builds = _builds(tmp_path)
    assert len(builds) == 2 and builds[0] == str(died.pid)
    assert results[0] == results[1] and results[0]["record"]["builder"] == int(builds[1])


def test_a_build_that_skips_skips_the_next_asker_unbuilt(tmp_path: Path) -> None:
    calls: list[Path] = []

    def build(files: Path) -> dict:
        calls.append(files)
        pytest.skip("no g++ here")

    for _ in range(2):
        with pytest.raises(pytest.skip.Exception, match="no g\\+\\+ here"):
            shared_build(tmp_path, "skips", build)
    assert len(calls) == 1


def test_a_write_into_the_shared_files_is_caught(tmp_path: Path) -> None:
    def build(files: Path) -> dict:
        (files / "tasks").mkdir()
        (files / "tasks" / "task.toml").write_text("x = 1\n")
        return {}

    built = shared_build(tmp_path, "bundle", build)
    (built.files / "tasks" / "task.toml").read_text()
    built.assert_unchanged()  # reading changes nothing
    time.sleep(0.01)
    (built.files / "tasks" / "jobs").mkdir()
    with pytest.raises(AssertionError, match=r"wrote into the shared build 'bundle'.*tasks/jobs"):
        built.assert_unchanged()


def test_the_shared_root_is_the_runs_and_the_basetemp_without_workers(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert run_root(tmp_path_factory) == base.parent
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert run_root(tmp_path_factory) == base


def test_the_failure_is_named_in_the_callers_process_too(tmp_path: Path) -> None:
    def build(files: Path) -> dict:
        raise RuntimeError(f"broke in {os.getpid()}")

    with pytest.raises(RuntimeError):
        shared_build(tmp_path, "broken", build)
    with pytest.raises(SharedBuildFailed, match=f"RuntimeError: broke in {os.getpid()}"):
        shared_build(tmp_path, "broken", build)
