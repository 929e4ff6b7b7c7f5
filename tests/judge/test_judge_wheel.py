"""The plugin's wheel carries its problem data, licence and provenance note."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
def test_wheel_ships_problem_zero(repo: Path, tmp_path: Path) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv is needed to build the wheel (pip install uv)"
    subprocess.run(
        [uv, "build", "--wheel", "--package", "atoll-frontiercs-judge", "--out-dir", str(tmp_path)],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("atoll_frontiercs_judge-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    base = "atoll/judge/problems/0/"
    for name in ("problem.toml", "statement.txt", "config.yaml", "LICENSE", "PROVENANCE.md"):
        assert base + name in names
    assert {f"{base}testdata/{i}.in" for i in range(1, 71)} <= names
    assert "atoll/judge/checkers/polyomino.py" in names
    assert not any(n.startswith("atoll/__init__") for n in names)  # a namespace package
