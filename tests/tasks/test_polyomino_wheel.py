"""A plain (non-editable) install of the judge plugin carries the task directory,
and its registration points at that packaged copy, not at a source checkout.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv is not on PATH; the workspace is installed with it")
    return found


def test_wheel_install_registers_the_packaged_task(repo: Path, tmp_path: Path) -> None:
    uv = _uv()
    dist = tmp_path / "dist"
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(dist), str(repo / "verifiers/frontiercs-judge")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("atoll_frontiercs_judge-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--python",
            str(python),
            str(repo / "plugins/atoll-core"),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import json; from atoll.core.registry import load; "
            "r = load().get('task', 'polyomino_packing'); "
            "print(json.dumps([r.target, r.distribution]))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    target, distribution = json.loads(probe.stdout)
    packaged = Path(target)
    assert distribution == "atoll-frontiercs-judge"
    assert packaged.is_relative_to(venv)
    assert packaged.parts[-3:] == ("judge", "tasks", "polyomino_packing")
    source = repo / "tasks" / "polyomino_packing"
    files = sorted(
        p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert "task.toml" in files and "solution/result.json" in files
    match, mismatch, errors = filecmp.cmpfiles(source, packaged, files, shallow=False)
    assert (mismatch, errors) == ([], [])
