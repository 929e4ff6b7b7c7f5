"""Where a plugin's task directory is: its copy in the wheel, or the repository's.

A plugin ships a task directory (from tasks/ at the repository root) inside its
wheel, under `<package>/tasks/<name>`. An editable install also gets a packaged
copy, but it is a snapshot taken at install time, so there the repository's
live directory is the one to use.
"""

from __future__ import annotations

import json
from importlib import metadata, resources
from pathlib import Path


def packaged_task_dir(distribution: str, package: str, name: str, repository: Path) -> Path:
    """`<package>/tasks/<name>` of a plain install, else `<repository>/tasks/<name>`."""
    if not _editable_install(distribution):
        packaged = resources.files(package).joinpath("tasks", name)
        if packaged.is_dir():
            return Path(str(packaged))
    return repository / "tasks" / name


def _editable_install(distribution: str) -> bool:
    try:
        direct_url = metadata.distribution(distribution).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    try:
        return bool(json.loads(direct_url or "{}").get("dir_info", {}).get("editable", False))
    except (ValueError, AttributeError):
        return False
