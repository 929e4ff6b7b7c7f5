"""pytest-xdist's `loadgroup` under pytest 9.2: the group suffix put back into the node ids."""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId


class GroupedNodeIds:
    """Puts pytest-xdist's group suffix (`…@group`) into the node ids pytest 9.2 reports.

    xdist 3.8 writes a test's group into `item._nodeid`, which pytest 9.2 no
    longer reads (a node's id is the structured `Node._id`), so its
    `loadgroup` scheduler saw no group and spread a group's tests over every
    worker. Setting the id from what xdist wrote restores the grouping; where
    xdist wrote nothing (no `loadgroup`, or a test of no group) nothing changes.
    """

    @pytest.hookimpl(trylast=True)  # after xdist's hook has written the suffix
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            grouped = item.__dict__.get("_nodeid")
            if isinstance(grouped, str) and grouped != item.nodeid:
                item._id = NodeId.parse(grouped)
