"""The scorers' box is the verifier's: its phase, its concurrency, and its leftovers."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from atoll.checker.verifier_box import WORK_LOCK, VerifierPhase, owned
from atoll.core.environments.local import DEFAULT_WORKDIR


@pytest.fixture
def example(repo: Path, tmp_path: Path) -> Path:
    task = tmp_path / "frontiersmith-example"
    shutil.copytree(repo / "tasks" / "frontiersmith-example", task)
    return task


def test_the_phase_reads_the_images_workdir_and_env_as_atoll_local_does(example):
    phase = VerifierPhase.of(example)
    assert (phase.timeout_s, phase.memory_mb, phase.cpus) == (276.0, 2048, 1.0)
    assert phase.workdir == "/workspace"
    dockerfile = example / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "ENV SEED=7 MODE=fast\n", encoding="utf-8")
    assert dict(VerifierPhase.of(example).image_env) == {"SEED": "7", "MODE": "fast"}
    dockerfile.unlink()
    assert VerifierPhase.of(example).workdir == DEFAULT_WORKDIR


@pytest.mark.parametrize(
    ("cores", "cpus", "slots"), [(2, 1.0, 2), (8, 1.0, 8), (8, 2.0, 4), (2, 4.0, 1), (1, None, 1)]
)
def test_concurrency_is_the_hosts_cpus_over_the_boxs(monkeypatch, cores, cpus, slots):
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert VerifierPhase(timeout_s=1.0, memory_mb=None, cpus=cpus).concurrency == slots


def test_a_killed_scorers_roots_are_removed_and_nothing_else(tmp_path):
    work = tmp_path / "checker"
    (work / "atoll-local-abc123" / "fs" / "tests").mkdir(parents=True)
    (work / "atoll-local-abc123" / "fs" / "tests" / "test.sh").write_text("")
    (work / "notes").mkdir()
    (work / "atoll-local-file").write_text("not a root")
    with owned(work, "checker"):
        assert sorted(p.name for p in work.iterdir()) == [WORK_LOCK, "atoll-local-file", "notes"]


def test_a_dir_another_scorer_holds_keeps_its_roots(tmp_path):
    work = tmp_path / "checker"
    (work / "atoll-local-inflight").mkdir(parents=True)
    fd = os.open(work / WORK_LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with owned(work, "checker"):
            assert (work / "atoll-local-inflight").is_dir()
    finally:
        os.close(fd)
    with owned(work, "checker"):
        assert not (work / "atoll-local-inflight").exists()
