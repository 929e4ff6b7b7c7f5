"""The parts of Euler-on-Ray that need no cluster: the rollout directory's round trip from a
node to the driver, and `--ray` on a machine without Ray."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.euler_cli import KEY_ENV

from atoll.euler import run_archive

# `atoll` with Ray absent, as after `pip install atoll-euler` without the extra.
WITHOUT_RAY = (
    "import sys; sys.modules['ray'] = None; from atoll.core.cli import run; sys.exit(run())"
)


def rollout_dir(root: Path) -> Path:
    run = root / "run"
    (run / "workspace" / "sub").mkdir(parents=True)
    (run / "record.json").write_text('{"commands": [], "scorable": true}\n')
    (run / "events.jsonl").write_bytes(b'{"type": "agent_end"}\n' * 3)
    (run / "workspace" / "sub" / "data.bin").write_bytes(bytes(range(256)))
    (run / "pi" / "home").mkdir(parents=True)
    return run


def tree(root: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
    }


def test_a_packed_rollout_directory_unpacks_to_the_same_tree(tmp_path: Path) -> None:
    source = rollout_dir(tmp_path / "node")
    target = tmp_path / "driver" / "rollouts" / "eval-p1-python-direct-s0"
    run_archive.unpack(run_archive.pack(source), target)
    assert tree(target) == tree(source)
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no staging left


def test_unpacking_never_overwrites_and_a_bad_archive_leaves_nothing(tmp_path: Path) -> None:
    data = run_archive.pack(rollout_dir(tmp_path / "node"))
    target = tmp_path / "rollouts" / "eval-p1-python-direct-s0"
    run_archive.unpack(data, target)
    before = tree(target)
    with pytest.raises(run_archive.ArchiveError, match="never overwritten"):
        run_archive.unpack(data, target)
    assert tree(target) == before
    other = tmp_path / "rollouts" / "eval-p2-python-direct-s0"
    with pytest.raises(run_archive.ArchiveError, match="cannot be unpacked"):
        run_archive.unpack(data[: len(data) // 3], other)  # cut short in transit
    assert sorted(p.name for p in other.parent.iterdir()) == [target.name]


def test_a_staging_directory_a_killed_driver_left_is_swept(tmp_path: Path) -> None:
    rollouts = tmp_path / "rollouts"
    kept = rollouts / "eval-p1-python-direct-s0"
    kept.mkdir(parents=True)
    (rollouts / ".eval-p2-python-direct-s0.incoming-1a2b3c4d" / "workspace").mkdir(parents=True)
    run_archive.sweep_incoming(rollouts)
    assert [p.name for p in rollouts.iterdir()] == [kept.name]


@pytest.mark.slow
def test_ray_without_the_extra_is_one_line_naming_it(sample_store: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY, "euler", "eval", "--store", str(sample_store)]
        + ["--problems", "1", "--languages", "python", "--base-url", "http://127.0.0.1:9/v1"]
        + ["--model", "m", "--api-key-env", KEY_ENV, "--out", str(tmp_path / "out")]
        + ["--ray", "auto"],
        capture_output=True,
        text=True,
        env={**os.environ, KEY_ENV: "k"},
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == ["error: --ray needs Ray on this machine: pip install 'atoll-euler[ray]'"]
    assert not (tmp_path / "out").exists()  # refused before anything was written
