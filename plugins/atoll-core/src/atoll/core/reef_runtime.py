"""Where a run's Reef keeps what both its stack and its agents read.

A stack renders Reef's configuration and an agent's training gate watches
the trainer it starts; each must find the other's files in the same place,
so the places are named here once, next to `atoll.core.reef_env`:

- Reef's durable storage and its trainer's checkpoints live under the run's
  state directory (`<state_dir>/reef/...`).
- `atoll stack up` keeps a run's stack in `<state_dir>/stack`, with Reef's own
  run directory in it (`reef-run`); a job's stack tells its agents where
  Reef's run directory is through `REEF_RUN_DIR` instead.
- `reef serve` writes each service's resolved configuration to
  `<run dir>/<service>/runtime.yaml` before it starts the service; its `reef`
  section names the Ray cluster the trainer joined (`ray_address`) and where
  the training bridge actor lives (`ray_namespace`, `ray_actor_name`). The
  training gate reads the actor through exactly that cluster, never through
  whatever `ray.init(address="auto")` happens to find on the machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from atoll.core.reef_env import RUN_DIR_ENV

RUNTIME_FILE = "runtime.yaml"
#: Reef's run directory inside a stack directory.
RUN_SUBDIR = "reef-run"
#: The stack directory `atoll stack up` uses inside a run's state directory.
STACK_SUBDIR = "stack"
#: The service that drives training; its runtime file is read first.
TRAINING_SERVICE = "slime-driver"
DEFAULT_NAMESPACE = "reef"
DEFAULT_ACTOR = "reef-train-bridge"


@dataclass(frozen=True)
class RayRuntime:
    """The Ray cluster Reef's trainer joined, and its training bridge actor there."""

    address: str
    namespace: str = DEFAULT_NAMESPACE
    actor: str = DEFAULT_ACTOR


def reef_state_dir(state_dir: Path) -> Path:
    """Reef's durable storage for a run: under the run's own state directory."""
    return state_dir / "reef"


def trainer_checkpoints_root(state_dir: Path) -> Path:
    """Reef's trainer's own checkpoint directory (its `checkpoint_dir`): both kinds live below."""
    return reef_state_dir(state_dir) / "checkpoints"


def trainer_checkpoint_dir(state_dir: Path) -> Path:
    """Where Reef's trainer saves (and reloads) the run's Megatron checkpoints.

    The stack renders it into Reef's serve.yaml and the training gate looks
    for the trainer's checkpoint marker in it, so both read it from here.
    """
    return trainer_checkpoints_root(state_dir) / "megatron"


def trainer_hf_dir(state_dir: Path) -> Path:
    """Where Reef's trainer publishes each step's adapter, and keeps its durable job marker.

    The stack renders `<this>/{rollout_id}` as the trainer's `save-hf`; Reef
    keeps the marker of its latest training job beside those directories.
    """
    return trainer_checkpoints_root(state_dir) / "hf"


def default_stack_dir(state_dir: Path) -> Path:
    """Where `atoll stack up` keeps the stack it starts for a run (its state, logs, Reef's run dir)."""
    return state_dir / STACK_SUBDIR


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
