"""Each distribution installs alone, with only the atoll distributions it declares, and imports.

tests/core/test_declared_dependencies.py reads the imports; this installs
each distribution into a fresh virtual environment (through `uv pip
install`, from the cache `uv sync` filled, as test_single_plugin_install.py
does) and imports every module of its package there, so a module-level
import that only a neighbour's dependencies satisfied fails here. Modules
that run in an interpreter of their own (that test's ELSEWHERE) and those
that need one of the distribution's extras (EXTRA_MODULES) are left out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from test_declared_dependencies import ELSEWHERE, REPO, normalise, requirement_name

pytestmark = pytest.mark.slow

# Modules that import one of their distribution's extras at module level, by design.
EXTRA_MODULES = {
    "atoll.guidance_ttt.tttd.objective": "the `reef` extra: Reef's trainer imports it",
    "atoll.guidance_ttt.tttd.slime": "the `reef` extra: Reef's Slime backend registers it",
    "atoll.guidance_ttt.harbor.reef_episode": "the `reef-eval` extra",
}

IMPORT_ALL = """
import importlib, json, pkgutil, sys
package, skipped = sys.argv[1], json.loads(sys.argv[2])
root = importlib.import_module(package)
failed = {}
for info in pkgutil.walk_packages(root.__path__, package + "."):
    if any(info.name == s or info.name.startswith(s + ".") for s in skipped):
        continue
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed[info.name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def _members() -> dict[str, Path]:
    found = {}
    for pyproject in sorted(REPO.glob("*/*/pyproject.toml")):
        found[normalise(tomllib.loads(pyproject.read_text())["project"]["name"])] = pyproject.parent
    return found


MEMBERS = _members()


def _with_atoll_requirements(name: str) -> list[Path]:
    """`name`'s directory and those of the atoll distributions it requires, transitively."""
    wanted, todo = [], [name]
    while todo:
        current = todo.pop()
        if current in wanted:
            continue
        wanted.append(current)
        project = tomllib.loads((MEMBERS[current] / "pyproject.toml").read_text())["project"]
        todo += [r for r in map(requirement_name, project.get("dependencies", [])) if r in MEMBERS]
    return [MEMBERS[n] for n in wanted]


def _package(root: Path) -> str:
    (package,) = [
        p.name for p in (root / "src" / "atoll").iterdir() if (p / "__init__.py").exists()
    ]
    return f"atoll.{package}"


def _skipped(root: Path) -> list[str]:
    package_dir = root / "src"
    skipped = []
    for path in ELSEWHERE:
        full = REPO / path
        if full.is_relative_to(package_dir):
            dotted = full.relative_to(package_dir).with_suffix("").as_posix().replace("/", ".")
            skipped.append(dotted)
    return skipped + [m for m in EXTRA_MODULES if m.startswith(_package(root) + ".")]


@pytest.mark.parametrize("name", sorted(MEMBERS))
def test_the_distribution_alone_imports_every_module(name: str, tmp_path: Path) -> None:
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH (the tests run through `uv run pytest`)"
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    roots = _with_atoll_requirements(name)
    install = subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(python), *map(str, roots)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    root = MEMBERS[name]
    done = subprocess.run(
        [str(python), "-c", IMPORT_ALL, _package(root), json.dumps(_skipped(root))],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {}
