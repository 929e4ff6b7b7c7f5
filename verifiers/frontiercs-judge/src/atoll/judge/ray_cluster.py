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
import socket
from types import ModuleType
from typing import Any

from atoll.core.termination import sigterm_kept
from atoll.judge.engine import JudgeInfrastructureError

#: The custom resource a node advertises to judge: how many processes it keeps busy at once.
JUDGE_RESOURCE = "atoll_judge"
INSTALL_HINT = "pip install 'atoll-frontiercs-judge[ray]'"
REACH_SECONDS = 10.0


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


def connect(address: str) -> tuple[ModuleType, bool]:
    """Ray, joined to the cluster at `address` (`auto`: the one this machine belongs to),
    and whether this call joined (then `ray.shutdown()` is the caller's to call)."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    _check_reachable(address)
    try:
        with sigterm_kept():  # Ray's own SIGTERM handler would outlive `ray.shutdown()`
            ray.init(
                address=address,
                namespace="atoll-judge",
                logging_level=logging.WARNING,
                log_to_driver=False,
                runtime_env={},
            )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise JudgeInfrastructureError(
            f"cannot join the Ray cluster at {address}: {str(exc).rstrip('.')}; start it with "
            "`ray start --head` or pass the address of its head (host:port)"
        ) from None
    return ray, True


def _check_reachable(address: str) -> None:
    """Refuse at once a head nothing answers at: Ray itself would retry for minutes."""
    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise JudgeInfrastructureError(
            f"--ray {address}: give the address of the cluster's head as host:port, or auto"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS).close()
    except OSError as exc:
        raise JudgeInfrastructureError(
            f"cannot reach the Ray cluster's head at {address}: {exc.strerror or exc}; start it "
            "with `ray start --head` or pass the address it printed"
        ) from None


def judge_nodes(ray: Any) -> dict[str, int]:
    """The live nodes that advertise the judge resource, and how many units each offers."""
    found = {}
    for node in ray.nodes():
        units = int(node["Resources"].get(JUDGE_RESOURCE, 0))
        if node["Alive"] and units >= 1:
            found[node["NodeID"]] = units
    return found
