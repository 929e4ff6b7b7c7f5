"""Joining a Ray cluster for the judge: Ray stays optional, and nothing of this machine travels.

Ray is imported only here and only when `--ray` is given. The driver joins
the cluster as a plain driver: no runtime environment is shipped, so neither
this machine's environment (keys, tokens) nor its working directory reaches
the nodes (`RAY_ENABLE_UV_RUN_RUNTIME_ENV=0`: under `uv run` Ray would
otherwise copy the working directory to every node). Each node runs the
atoll it has installed.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType
from typing import Any

from atoll.judge.engine import JudgeInfrastructureError

#: The custom resource a node advertises to judge: how many processes it keeps busy at once.
JUDGE_RESOURCE = "atoll_judge"
INSTALL_HINT = "pip install 'atoll-frontiercs-judge[ray]'"


def import_ray() -> ModuleType:
    """Ray, or one clear error naming the extra that installs it."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise JudgeInfrastructureError(
            f"judging on a Ray cluster needs Ray on this machine: {INSTALL_HINT}"
        ) from None
    return ray


def connect(address: str) -> ModuleType:
    """Ray, joined to the cluster at `address` (`auto`: the one this machine belongs to)."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    try:
        ray.init(
            address=address,
            namespace="atoll-judge",
            logging_level=logging.WARNING,
            log_to_driver=False,
            runtime_env={},
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise JudgeInfrastructureError(
            f"cannot join the Ray cluster at {address}: {exc}; start it with `ray start --head` "
            "or pass the address of its head (host:port)"
        ) from None
    return ray


def judge_nodes(ray: Any) -> dict[str, int]:
    """The live nodes that advertise the judge resource, and how many units each offers."""
    found = {}
    for node in ray.nodes():
        units = int(node["Resources"].get(JUDGE_RESOURCE, 0))
        if node["Alive"] and units >= 1:
            found[node["NodeID"]] = units
    return found
