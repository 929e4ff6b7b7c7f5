"""The suite's xdist groups hold: every test of a group runs on one worker.

The suite relies on it to build a costly shared thing once (tests/conftest.py's
SHARED_SESSION_FIXTURES; the nftables tests' group). pytest-xdist 3.8 under
pytest 9.2 dropped every group silently, which only a run on several workers
shows: so a small suite is run here the way CI runs this one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from support.xdist_groups import GroupedNodeIds

def pytest_configure(config):
    config.pluginmanager.register(GroupedNodeIds(), "grouped-node-ids")
"""

SUITE = """
import os
from pathlib import Path
import pytest

def _record(name):
    Path(os.environ["RECORDS"], name).write_text(os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    _record(f"grouped-{i}")

@pytest.mark.parametrize("i", range(6))
def test_anywhere(i):
    _record(f"anywhere-{i}")
"""


def test_the_tests_of_a_group_run_on_one_worker(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    records = tmp_path / "records"
    suite.mkdir()
    records.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_grouped.py").write_text(SUITE)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "3",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=suite,
        env={**os.environ, "RECORDS": str(records)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers = {path.name: path.read_text() for path in records.iterdir()}
    assert len(workers) == 12, workers
    grouped = {workers[f"grouped-{i}"] for i in range(6)}
    assert len(grouped) == 1, workers
