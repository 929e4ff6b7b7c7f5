"""The atoll-discovery wheel carries the five task directories, byte for byte, where its
registration looks for them (`atoll/discovery/tasks/<name>`, see `task_dirs`)."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from atoll.discovery import TASKS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_the_wheel_ships_every_task_directory(repo: Path, tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not on PATH; the workspace is installed with it")
    dist = tmp_path / "dist"
    subprocess.run(
        [uv, "build", "--offline", "--wheel", "--out-dir", str(dist)]
        + [str(repo / "verifiers" / "discovery")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("atoll_discovery-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name: archive.read(name) for name in archive.namelist()}
    assert "atoll/discovery/verify.py" in shipped and "atoll/discovery/plugin.py" in shipped
    for name in TASKS:
        source = repo / "tasks" / name
        files = sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        assert len(files) >= 10
        for path in files:
            packaged = f"atoll/discovery/tasks/{name}/{path.relative_to(source).as_posix()}"
            assert shipped.get(packaged) == path.read_bytes(), packaged
