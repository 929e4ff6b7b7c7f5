"""Every plugin is a regular, typed package below the PEP 420 namespace `atoll`.

A regular package (one with an `__init__.py`) is imported from exactly one
directory, which is what lets a plugin find the task directories its wheel
carries; `py.typed` tells type checkers that the plugin's annotations are
meant to be read. Both must hold in the source tree and in the built wheels.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest


def _members(repo: Path) -> dict[str, tuple[Path, str]]:
    """distribution name -> (member directory, its package below `atoll`)."""
    root = tomllib.loads((repo / "pyproject.toml").read_text())
    members = {}
    for member in root["tool"]["uv"]["workspace"]["members"]:
        project = tomllib.loads((repo / member / "pyproject.toml").read_text())["project"]
        (hook_module,) = project["entry-points"]["atoll"].values()
        namespace, package, _ = hook_module.split(".", 2)
        assert namespace == "atoll", hook_module
        members[project["name"]] = (repo / member, package)
    return members


def test_every_plugin_package_is_regular_and_typed(repo: Path) -> None:
    members = _members(repo)
    assert len(members) == 10
    for distribution, (member, package) in members.items():
        source = member / "src" / "atoll" / package
        assert (source / "__init__.py").is_file(), f"{distribution}: no {package}/__init__.py"
        assert (source / "py.typed").is_file(), f"{distribution}: no {package}/py.typed"
        assert not (member / "src" / "atoll" / "__init__.py").exists()


def test_the_installed_packages_resolve_to_their_source_tree(repo: Path) -> None:
    """The editable install's snapshot of a packaged task never shadows the source package."""
    import importlib

    for member, package in _members(repo).values():
        module = importlib.import_module(f"atoll.{package}")
        assert module.__file__ == str(member / "src" / "atoll" / package / "__init__.py")
        assert len(module.__path__) == 1


def test_importing_every_plugin_package_loads_no_third_party_module(repo: Path) -> None:
    packages = sorted(package for _, package in _members(repo).values())
    probe = (
        "import importlib, json, sys\n"
        "before = set(sys.modules)\n"
        f"for package in {packages!r}:\n"
        "    importlib.import_module('atoll.' + package)\n"
        "new = {name.split('.')[0] for name in set(sys.modules) - before}\n"
        "print(json.dumps(sorted(new - set(sys.stdlib_module_names))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    # atoll.core's package pulls in pluggy for `hookimpl`; nothing else is allowed.
    assert json.loads(done.stdout) == ["atoll", "pluggy"]


@pytest.mark.slow
def test_every_wheel_carries_its_init_and_py_typed(repo: Path, tmp_path: Path) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv is not on PATH; the workspace is installed with it"
    subprocess.run(
        [uv, "build", "--all-packages", "--wheel", "--out-dir", str(tmp_path)],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=300,
    )
    for distribution, (_, package) in _members(repo).items():
        (wheel,) = tmp_path.glob(f"{distribution.replace('-', '_')}-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
        code = {name for name in names if name.startswith("atoll/")}
        assert f"atoll/{package}/__init__.py" in code, distribution
        assert f"atoll/{package}/py.typed" in code, distribution
        assert "atoll/__init__.py" not in code, distribution
        assert all(name.startswith(f"atoll/{package}/") for name in code), distribution
