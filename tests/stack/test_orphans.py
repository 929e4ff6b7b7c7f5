"""Reefs whose owning job died: found from anywhere, stopped with their token files, never a live one's.

Real processes throughout: the owner records are written by real processes
that then exit (so their owner tags are provably dead) or by this test
process (alive), and the "Reef" of each record is a real process group
started the way the stack starts Reef. The full path with a real `reef
serve` in a killed Harbor job is in test_orphan_reef.py.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from stack_support import atoll

from atoll.core.user_dirs import STATE_ENV
from atoll.stack import orphans, owner_index, processes
from atoll.stack import state as state_file
from atoll.stack.render import RUN_SUBDIR
from atoll.stack.state import StackState

TOKEN_LINE = "token: test-token-not-secret\n"


@pytest.fixture(autouse=True)
def own_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own index of job-owned Reefs (never the machine's)."""
    home = tmp_path / "state-home"
    monkeypatch.delenv(STATE_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def _run_with_reef(
    root: Path, *, owner_alive: bool, url: str = "http://127.0.0.1:18900"
) -> tuple[Path, processes.Recorded, Path]:
    """A run whose job recorded a Reef it started: (state dir, the Reef's process, its token file)."""
    state_dir, stack_dir = root / "state", root / "job" / "reef-stack"
    if owner_alive:
        orphans.record(state_dir, stack_dir, url)
    else:  # recorded by a job process that is gone now
        code = "import sys; from pathlib import Path; from atoll.stack import orphans; "
        code += "orphans.record(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])"
        subprocess.run(
            [sys.executable, "-c", code, str(state_dir), str(stack_dir), url], check=True
        )
    reef = processes.spawn(
        "reef-serve", ["sleep", "60"], stack_dir / "logs" / "reef.log", os.environ
    )
    state_file.save(stack_dir, StackState(reef_url=url, mode="search-only", processes=[reef]))
    token_file = stack_dir / RUN_SUBDIR / "reef" / "runtime.yaml"
    token_file.parent.mkdir(parents=True)
    token_file.write_text(TOKEN_LINE)
    return state_dir, reef, token_file


@pytest.mark.slow
def test_a_dead_owners_reef_is_listed_and_stopped_a_live_owners_is_not(tmp_path):
    dead_state, dead_reef, dead_token = _run_with_reef(tmp_path / "killed", owner_alive=False)
    live_state, live_reef, live_token = _run_with_reef(
        tmp_path / "running", owner_alive=True, url="http://127.0.0.1:18901"
    )
    try:
        (left,) = orphans.left_behind()
        assert left.state_dir == dead_state
        assert [p.pid for p in left.living] == [dead_reef.pid]
        assert left.token_files == (dead_token,)
        assert f"of the run in {dead_state}; reef-serve pid {dead_reef.pid}" in left.describe()
        assert "1 runtime file(s) still hold its token" in left.describe()
        finding = orphans.doctor_check()
        assert not finding.ok and finding.warning and finding.fix == "`atoll stack down --orphans`"

        said = io.StringIO()
        stopped = orphans.stop_left_behind(Console(file=said, width=300))
        assert [s.state_dir for s in stopped] == [dead_state]
        assert (
            "stopped the Reef at http://127.0.0.1:18900 that a killed job left" in said.getvalue()
        )
        assert f"removed {dead_token} (it held the token)" in said.getvalue()
        assert not processes.alive(dead_reef) and not dead_token.exists()
        assert not orphans.record_path(dead_state).exists()
        assert owner_index.state_dirs() == [live_state]
        # The live job's Reef, record and token file are its own business.
        assert processes.alive(live_reef) and live_token.exists()
        assert orphans.left_behind() == [] and orphans.doctor_check().ok
    finally:
        processes.stop([dead_reef, live_reef], grace=5)


@pytest.mark.slow
def test_a_dead_owners_reef_that_died_too_is_listed_while_its_token_is_on_disk(tmp_path):
    state_dir, reef, token = _run_with_reef(tmp_path, owner_alive=False)
    processes.stop([reef], grace=5)
    (left,) = orphans.left_behind()
    assert left.living == () and left.token_files == (token,)
    assert "nothing runs; 1 runtime file(s) still hold its token" in left.describe()
    said = io.StringIO()
    orphans.stop_left_behind(Console(file=said, width=300))
    assert "stopped the Reef" not in said.getvalue()
    assert not token.exists() and owner_index.state_dirs() == []


def test_a_job_that_stopped_its_reef_leaves_nothing_to_list(tmp_path):
    state_dir, reef, token = _run_with_reef(tmp_path, owner_alive=True)
    processes.stop([reef], grace=5)
    token.unlink()
    orphans.release(state_dir)  # what the job plugin does at its end
    assert owner_index.state_dirs() == [] and orphans.left_behind() == []
    finding = orphans.doctor_check()
    assert finding.ok and finding.detail == "no Reef left behind by a killed job"


def test_a_private_process_creates_only_owner_only_files(tmp_path):
    made = tmp_path / "made"
    processes.spawn(
        "writer", ["sh", "-c", f"echo secret > {made}; mkdir {tmp_path / 'dir'}"],
        tmp_path / "writer.log", os.environ, private=True,
    )  # fmt: skip
    subprocess.run(
        ["sh", "-c", f"while [ ! -d {tmp_path / 'dir'} ]; do sleep 0.01; done"], timeout=10
    )
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "dir").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "writer.log").stat().st_mode) == 0o600


def test_an_ordinary_process_keeps_the_usual_modes(tmp_path):
    made = tmp_path / "made"
    processes.spawn(
        "writer", ["sh", "-c", f"echo plain > {made}.tmp && mv {made}.tmp {made}"],
        tmp_path / "writer.log", os.environ,
    )  # fmt: skip
    subprocess.run(["sh", "-c", f"while [ ! -f {made} ]; do sleep 0.01; done"], timeout=10)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(made.stat().st_mode) == 0o666 & ~umask


def test_an_index_entry_whose_run_was_deleted_is_dropped(tmp_path):
    state_dir, reef, token = _run_with_reef(tmp_path, owner_alive=True)
    processes.stop([reef], grace=5)
    shutil.rmtree(state_dir)
    assert orphans.left_behind() == []
    assert orphans.stop_left_behind(Console(file=io.StringIO())) == []
    assert owner_index.state_dirs() == []


@pytest.mark.slow
def test_down_orphans_with_a_stack_dir_is_one_line_and_stops_nothing(tmp_path, stack_env):
    done = atoll(["stack", "down", "--orphans", "--stack-dir", str(tmp_path)], stack_env)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--orphans stops the Reefs of every killed job on this machine" in line
