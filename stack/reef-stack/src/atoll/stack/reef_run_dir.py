"""What Reef's own run directory tells about a started stack.

`reef serve` starts each of its services (the HTTP service, the training
driver) in a process group of its own and writes `<service>.worker.json`
with their pids, and `<service>/runtime.yaml` with the resolved
configuration, including the Ray address it connected to. The stack adopts
those pids, so that a `reef serve` killed without its own cleanup leaves
nothing behind, and reports the Ray address.

The resolved configuration holds the bearer token in clear (Reef writes it
with mode 0600 for its services to read at start). Once the stack is down it
is deleted, so that a job directory that is archived or uploaded afterwards
carries no secret.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from atoll.core.reef_runtime import read_ray_runtime
from atoll.stack import processes
from atoll.stack.processes import Recorded


def service_processes(run_dir: Path, known: Iterable[Recorded]) -> list[Recorded]:
    """Reef's live service processes not already in `known`."""
    seen = {p.pid for p in known}
    found: list[Recorded] = []
    for worker in sorted(run_dir.glob("*.worker.json")):
        try:
            pids = json.loads(worker.read_text()).get("pids", {})
        except (OSError, ValueError, AttributeError):
            continue
        for name, pid in pids.items():
            started = processes.start_time(int(pid))
            if started is None or int(pid) in seen:
                continue
            log = run_dir / name / f"{name}.log"
            found.append(Recorded(f"reef:{name}", int(pid), started, (), str(log)))
            seen.add(int(pid))
    return found


def ray_address(run_dir: Path) -> str | None:
    """The Ray address Reef's services were given, from their runtime files (as the agent reads it)."""
    runtime = read_ray_runtime(run_dir)
    return None if runtime is None else runtime.address


def resolved_configs(run_dir: Path) -> list[Path]:
    """Reef's `*/runtime.yaml` files in `run_dir`: its resolved configuration, token included."""
    return sorted(run_dir.glob("*/runtime.yaml"))


def remove_resolved_configs(run_dir: Path) -> list[Path]:
    """Delete Reef's `*/runtime.yaml` files (they hold the token); returns what was deleted."""
    removed = []
    for runtime in resolved_configs(run_dir):
        runtime.unlink(missing_ok=True)
        removed.append(runtime)
    return removed
