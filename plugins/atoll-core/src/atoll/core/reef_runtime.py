"""Where Reef's trainer runs: the Ray cluster, namespace and actor, from Reef's own runtime files.

`reef serve` writes each service's resolved configuration to
`<run dir>/<service>/runtime.yaml` before it starts the service; its `reef`
section names the Ray cluster the trainer joined (`ray_address`) and where
the training bridge actor lives (`ray_namespace`, `ray_actor_name`). The
training gate reads the actor through exactly that cluster, never through
whatever `ray.init(address="auto")` happens to find on the machine. The Reef
stack reads the same files with this module, and tells a job's agents where
Reef's run directory is through `REEF_RUN_DIR`; without it, the run's own
stack directory (`atoll stack up`'s default) is where the files are looked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from atoll.core.reef_env import RUN_DIR_ENV
from atoll.guidance_ttt.config import default_stack_dir

RUNTIME_FILE = "runtime.yaml"
# Reef's run directory inside a stack directory.
RUN_SUBDIR = "reef-run"
# The service that drives training; its runtime file is read first.
TRAINING_SERVICE = "slime-driver"
DEFAULT_NAMESPACE = "reef"
DEFAULT_ACTOR = "reef-train-bridge"


@dataclass(frozen=True)
class RayRuntime:
    """The Ray cluster Reef's trainer joined, and its training bridge actor there."""

    address: str
    namespace: str = DEFAULT_NAMESPACE
    actor: str = DEFAULT_ACTOR


def run_dir(state_dir: Path, environ: Mapping[str, str]) -> Path:
    """Reef's run directory for this run: `REEF_RUN_DIR`, else the run's own stack's."""
    named = environ.get(RUN_DIR_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    return default_stack_dir(state_dir.expanduser()) / RUN_SUBDIR


def read_ray_runtime(reef_run_dir: Path) -> RayRuntime | None:
    """The Ray runtime named by Reef's runtime files in `reef_run_dir`; None when none names one."""
    files = sorted(reef_run_dir.glob(f"*/{RUNTIME_FILE}"))
    files.sort(key=lambda path: path.parent.name != TRAINING_SERVICE)
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        reef = data.get("reef") if isinstance(data, Mapping) else None
        if not isinstance(reef, Mapping) or not reef.get("ray_address"):
            continue
        return RayRuntime(
            address=str(reef["ray_address"]),
            namespace=str(reef.get("ray_namespace") or DEFAULT_NAMESPACE),
            actor=str(reef.get("ray_actor_name") or DEFAULT_ACTOR),
        )
    return None
