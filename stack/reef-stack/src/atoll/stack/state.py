"""The stack's state file: what `up` started, so that `down` stops exactly that.

One JSON file per stack directory, written atomically. It names the Reef URL,
whether Reef was found already running (then nothing is ours to stop), the
Ray address, and every process started or adopted, with the identity that
`atoll.stack.processes` checks before signalling. It never holds a token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from atoll.core.durable import atomic_write_bytes
from atoll.stack.errors import StackError
from atoll.stack.processes import Recorded

STATE_FILE = "stack.json"
FORMAT_VERSION = 1


@dataclass
class StackState:
    reef_url: str
    mode: str
    reused: bool = False
    ray_address: str | None = None
    ray_owned: bool = False
    serve_yaml: str = ""
    processes: list[Recorded] = field(default_factory=list)
    # Reef's run dir when it is not this stack dir's (a Reef adopted from a killed job).
    run_dir: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "version": FORMAT_VERSION,
            "reef_url": self.reef_url,
            "mode": self.mode,
            "reused": self.reused,
            "ray_address": self.ray_address,
            "ray_owned": self.ray_owned,
            "serve_yaml": self.serve_yaml,
            "processes": [p.to_json() for p in self.processes],
            "run_dir": self.run_dir,
        }


def state_path(stack_dir: Path) -> Path:
    return stack_dir / STATE_FILE


def save(stack_dir: Path, state: StackState) -> None:
    data = json.dumps(state.to_json(), indent=2, sort_keys=True).encode() + b"\n"
    atomic_write_bytes(state_path(stack_dir), data, make_parents=True)


def load(stack_dir: Path) -> StackState | None:
    """The recorded state, or None when nothing was started from `stack_dir`."""
    path = state_path(stack_dir)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StackError(
            f"cannot read the stack state {path}: {exc}; remove it if no stack runs"
        ) from exc
    if data.get("version") != FORMAT_VERSION:
        raise StackError(f"{path} has format {data.get('version')!r}, expected {FORMAT_VERSION}")
    return StackState(
        reef_url=str(data["reef_url"]),
        mode=str(data["mode"]),
        reused=bool(data.get("reused", False)),
        ray_address=data.get("ray_address"),
        ray_owned=bool(data.get("ray_owned", False)),
        serve_yaml=str(data.get("serve_yaml", "")),
        processes=[Recorded.from_json(p) for p in data.get("processes", [])],
        run_dir=str(data.get("run_dir", "")),
    )


def clear(stack_dir: Path) -> None:
    state_path(stack_dir).unlink(missing_ok=True)
