"""atoll-euler is its own distribution: it installs on its own beside atoll-core and
atoll-pi-docker, and atoll-pi-docker alone no longer brings `atoll euler`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]


def _run(*argv: str | Path, timeout: int = 540) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_atoll_euler_installs_on_its_own_and_its_command_works(repo: Path, tmp_path: Path) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv is not on PATH; the workspace is installed with it"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python, atoll = venv / "bin" / "python", venv / "bin" / "atoll"
    base = _run(
        uv, "pip", "install", "--python", python,
        repo / "plugins" / "atoll-core", repo / "agents" / "pi-docker",
    )  # fmt: skip
    assert base.returncode == 0, base.stderr[-3000:]
    without = _run(atoll, "euler", "--help", timeout=120)
    assert without.returncode != 0 and "No such command 'euler'" in without.stderr

    added = _run(uv, "pip", "install", "--python", python, repo / "agents" / "euler")
    assert added.returncode == 0, added.stderr[-3000:]
    installed = _run(uv, "pip", "list", "--python", python, "--format", "json", timeout=120)
    names = {p["name"] for p in json.loads(installed.stdout)}
    assert {"atoll-core", "atoll-pi-docker", "atoll-euler"} <= names
    assert not any(
        n.startswith("atoll-") for n in names - {"atoll-core", "atoll-pi-docker", "atoll-euler"}
    )

    store = tmp_path / "store"
    imported = _run(atoll, "euler", "import", "--sample", "--store", store, timeout=120)
    assert imported.returncode == 0, imported.stderr
    probe = _run(
        python, "-c",
        "import sys; from pathlib import Path; from atoll.euler import Store; "
        "s = Store(Path(sys.argv[1])); print(s.numbers()[-1], s.expected(1), Store.__module__)",
        store, timeout=120,
    )  # fmt: skip
    assert probe.stdout.split() == ["10", "233168", "atoll.euler.store"], probe.stderr
    scored = _run(atoll, "euler", "score", tmp_path / "no-rollout", "--expected", "1", timeout=120)
    assert scored.returncode == 2 and "does not exist: not a finished rollout" in scored.stderr
