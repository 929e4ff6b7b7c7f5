"""Each distribution installs alone, with only the atoll distributions it declares, and imports.

tests/core/test_declared_dependencies.py reads the imports; this installs
each distribution into a fresh virtual environment (support/lone_venv.py)
and imports every module of its package there, so a module-level
import that only a neighbour's dependencies satisfied fails here. Modules
that run in an interpreter of their own (that test's ELSEWHERE) and those
that need one of the distribution's extras (EXTRA_MODULES) are left out.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.lone_venv import lone_venv
from test_declared_dependencies import ELSEWHERE, REPO, distributions

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


MEMBERS = {dist.name: dist for dist in distributions()}


def _with_atoll_requirements(name: str) -> list[Path]:
    """`name`'s directory and those of the atoll distributions it requires, transitively."""
    wanted, todo = [], [name]
    while todo:
        current = todo.pop()
        if current not in wanted:
            wanted.append(current)
            todo += [r for r in MEMBERS[current].required if r in MEMBERS]
    return [MEMBERS[n].root for n in wanted]


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
    python = lone_venv(tmp_path / "venv", _with_atoll_requirements(name))
    root = MEMBERS[name].root
    done = subprocess.run(
        [str(python), "-c", IMPORT_ALL, _package(root), json.dumps(_skipped(root))],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {}
