"""The `atoll` command of the tests' environment and the variable the Euler tests pass a key in.

Test modules import these from here, not from a conftest: which `conftest`
module Python finds depends on which test folders a run collects.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ATOLL = str(Path(sys.executable).parent / "atoll")
KEY_ENV = "ATOLL_EULER_TEST_KEY"

#: What each node of the tests' Ray cluster holds in its own environment (the driver never
#: does): the model's key under KEY_ENV, a value the tests grep Ray's logs for.
RAY_NODE_KEY = "sk-euler-ray-node-7c1f0a93e5"
RAY_NODE_ENV = {KEY_ENV: RAY_NODE_KEY}

#: What differs between two runs of the same attempts by nature: where, when, which ids.
VOLATILE = {"latency_s", "created_at", "rollout_id", "ray_node"}


def driver_env(cluster: Any) -> dict[str, str]:
    """A Ray driver's environment: the cluster's address rules, and no model key at all."""
    env = {k: v for k, v in cluster.env.items() if k != KEY_ENV}
    assert RAY_NODE_KEY not in "".join(env.values())
    return env


def read_rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A row without what two runs of the same attempts differ in by nature."""
    kept = {k: v for k, v in row.items() if k not in VOLATILE}
    kept["container"] = {k: v for k, v in row["container"].items() if k != "id"}
    kept["cleanup"] = {k: v for k, v in (row["cleanup"] or {}).items() if k != "seconds"}
    return kept
