"""Where a plugin's task directory is: its copy in the wheel, or the repository's.

A plugin ships a task directory (from tasks/ at the repository root) inside its
wheel, under `<package>/tasks/<name>`. Every plugin package is a regular
package (it has an `__init__.py`), so it is imported from exactly one
directory: site-packages in a wheel install, the source tree in an editable
one. Only the wheel's copy has a `tasks/` beside the modules; a source tree
has none, and there the repository's live directory is the one to use. (An
editable install also leaves a snapshot of the task under site-packages, but
the package never resolves there, so the snapshot is never read.)
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def packaged_task_dir(package: str, name: str, repository: Path) -> Path:
    """`<package>/tasks/<name>` where the package carries it, else `<repository>/tasks/<name>`."""
    packaged = resources.files(package).joinpath("tasks", name)
    if packaged.is_dir():
        return Path(str(packaged))
    return repository / "tasks" / name
