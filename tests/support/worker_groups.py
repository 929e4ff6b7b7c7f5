"""Tests that share one costly or exclusive thing run on one pytest-xdist worker.

pytest-xdist's own `--dist loadgroup` marks a test's group by appending it to
the test's node id, which pytest 9.2's structured node ids no longer allow:
the suffix is dropped and every group is spread over all workers. So each
worker writes the groups it collected (node id -> group) to a file the
controller named, and the controller's scheduler reads them to keep each
group on one worker; a test in no group is a group of its own. Grouped tests
come first in the collection, so that the longest chains start at once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

GROUPS_FILE = "atoll_xdist_groups"


def group_of(item: pytest.Item) -> str | None:
    marks = list(item.iter_markers("xdist_group"))
    if not marks:
        return None
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks}
    return "_".join(sorted(names))


def record(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: put grouped tests first and write node id -> group for the controller."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None or GROUPS_FILE not in workerinput:
        return
    groups = {item.nodeid: group for item in items if (group := group_of(item)) is not None}
    items.sort(key=lambda item: item.nodeid not in groups)  # stable: grouped ones first
    path = Path(workerinput[GROUPS_FILE])
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(groups))
    partial.replace(path)  # every worker writes the same map; each write is whole


def make_scheduler(config: pytest.Config, log: Any, path: Path) -> Any:
    """The controller's scheduler: xdist's scope scheduling with the workers' groups as scopes."""
    from xdist.scheduler import LoadScopeScheduling

    class ResourceGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = json.loads(path.read_text()) if path.is_file() else {}
            group = self._groups.get(nodeid)
            return f"@group:{group}" if group is not None else nodeid

    return ResourceGroupScheduling(config, log)
