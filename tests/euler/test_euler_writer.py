"""One writer per run directory: a second `eval`, `curriculum` or `transfer run` on a run
directory in use is refused with one line naming the holder; the first one's rows stay single."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_solver import bash, solver, write
from support.euler_cli import ATOLL, KEY_ENV
from support.openai_server import ScriptedOpenAIServer

from atoll.euler import writer

P1 = "print(sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0))\n"
HOLD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from atoll.euler import writer\n"
    "with writer.hold(Path(sys.argv[1]), 'atoll euler eval'):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(120)\n"
)


def holding(run_dir: Path) -> subprocess.Popen[str]:
    """Another process that holds `run_dir` until it is killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def test_a_second_writer_is_refused_naming_the_holder(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    other = holding(run_dir)
    try:
        with pytest.raises(writer.RunDirInUse) as refused, writer.hold(run_dir, "atoll euler eval"):
            pass
        message = str(refused.value)
        assert f"pid {other.pid}" in message and "`atoll euler eval`" in message
        assert str(run_dir) in message
    finally:
        other.kill()
        other.wait()
    # The kernel let go of the killed holder's lock: the directory is free again.
    with writer.hold(run_dir, "atoll euler eval"):
        assert json.loads((run_dir / writer.HOLDER_FILE).read_text())["pid"] != other.pid
    assert not (run_dir / writer.HOLDER_FILE).exists()


def test_one_writer_after_another_is_fine(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    for _ in range(2):
        with writer.hold(run_dir, "atoll euler eval"):
            assert (run_dir / writer.HOLDER_FILE).is_file()
    assert writer.is_empty(run_dir)


def _holder_pid(run_dir: Path) -> int:
    return int(json.loads((run_dir / writer.HOLDER_FILE).read_text())["pid"])


def test_different_run_directories_do_not_wait_for_each_other(tmp_path: Path) -> None:
    """Two holders at once, timed: the second directory is held at once while the first
    one's holder, which keeps it for 120 s, still holds it; the first one refuses at once."""
    other = holding(tmp_path / "a")
    try:
        started = time.monotonic()
        with writer.hold(tmp_path / "b", "atoll euler eval"):
            held_after = time.monotonic() - started
            assert other.poll() is None  # the first holder still runs, holding `a`
            assert _holder_pid(tmp_path / "a") == other.pid
            assert _holder_pid(tmp_path / "b") == os.getpid()
        started = time.monotonic()
        with pytest.raises(writer.RunDirInUse), writer.hold(tmp_path / "a", "atoll euler eval"):
            pass
        refused_after = time.monotonic() - started
    finally:
        other.kill()
        other.wait()
    # Waiting would take the holder's 120 s; a loaded machine still answers within seconds.
    assert held_after < 5 and refused_after < 5, (held_after, refused_after)


def model_flags(url: str, out_flag: str, out: Path) -> list[str]:
    return [
        "--base-url", url, "--model", "scripted-model", "--api-key-env", KEY_ENV,
        out_flag, str(out), "--max-turns", "6", "--timeout", "120",
    ]  # fmt: skip


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "out_flag"),
    [
        (["curriculum", "--rounds", "1", "--no-replay", "--samples", "1"], "--state"),
        (["transfer", "run", "--languages", "python", "--samples", "1"], "--out"),
    ],
)
def test_curriculum_and_transfer_run_refuse_a_run_directory_in_use(
    rollout_ready: dict[str, Any],
    sample_store: Path,
    key_env: dict[str, str],
    tmp_path: Path,
    args: list[str],
    out_flag: str,
) -> None:
    run_dir = tmp_path / "run"
    other = holding(run_dir)
    try:
        with ScriptedOpenAIServer() as provider:
            store = ["--store", str(sample_store)] if args[0] == "curriculum" else []
            done = subprocess.run(
                [ATOLL, "euler", *args, *store, *model_flags(provider.base_url, out_flag, run_dir)],
                capture_output=True, text=True, env=key_env, timeout=300,
            )  # fmt: skip
            assert provider.chat_requests() == []  # refused before any rollout
    finally:
        other.kill()
        other.wait()
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and f"pid {other.pid}" in last and "in use by" in last


@pytest.mark.docker
@pytest.mark.slow
def test_two_evals_on_one_run_directory_run_each_attempt_once(
    rollout_ready: dict[str, Any], sample_store: Path, key_env: dict[str, str], tmp_path: Path
) -> None:
    slow = solver(
        lambda key, language, model: [write("solution.py", P1), bash("python3 solution.py")],
        delay_s=1.0,
    )
    out = tmp_path / "run"
    with ScriptedOpenAIServer(slow) as provider:
        command = [
            ATOLL, "euler", "eval", "--store", str(sample_store), "--problems", "1",
            "--languages", "python", "--samples", "2",
            *model_flags(provider.base_url, "--out", out),
        ]  # fmt: skip
        first = subprocess.Popen(
            command, env=key_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 180
        while not (out / writer.HOLDER_FILE).exists() and time.monotonic() < deadline:
            assert first.poll() is None, first.communicate()[1][-2000:]
            time.sleep(0.1)
        second = subprocess.run(command, capture_output=True, text=True, env=key_env, timeout=300)
        _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err[-2000:]
    assert second.returncode == 2
    last = second.stderr.strip().splitlines()[-1]
    assert f"in use by `atoll euler eval` (pid {first.pid}" in last
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert sorted(r["sample"] for r in rows) == [0, 1]
    assert all(r["status"] == "scored" and r["passed"] for r in rows)
