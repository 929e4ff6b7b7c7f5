"""What `up` will do, decided from the stack's config and the stack options.

The mode (training or search-only), Reef's address, the stack and state
directories and the health deadline are settled here, before anything starts,
so that `render` prints exactly the file `up` would start Reef with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atoll.core.reef_runtime import default_stack_dir
from atoll.stack.config import StackConfig
from atoll.stack.errors import StackError
from atoll.stack.options import StackOptions
from atoll.stack.render import Placement, reef_address, render, to_yaml

SEARCH_ONLY_READY_S = 120.0
TRAINING_READY_S = 3600.0


@dataclass(frozen=True)
class Plan:
    """Everything `up` will do, decided before anything starts."""

    config: StackConfig
    options: StackOptions
    training: bool
    placement: Placement
    upstream: tuple[str, str] | None

    @property
    def reef_url(self) -> str:
        return f"http://{self.placement.host}:{self.placement.port}"

    @property
    def stack_dir(self) -> Path:
        return self.placement.stack_dir

    @property
    def serve_yaml(self) -> str:
        return to_yaml(
            render(self.config, self.placement, training=self.training), upstream=self.upstream
        )


def plan(config: StackConfig, options: StackOptions, *, stack_dir: Path | None = None) -> Plan:
    """Decide the mode, the address and the directories from the config and the options."""
    training = options.training if options.training is not None else config.training == "on"
    host, port = reef_address(config, options.port)
    state_dir = config.state_dir.expanduser().resolve()
    directory = (
        (options.stack_dir or stack_dir or default_stack_dir(state_dir)).expanduser().resolve()
    )
    deadline = options.ready_timeout_s or (TRAINING_READY_S if training else SEARCH_ONLY_READY_S)
    upstream = None
    if not training:
        # Explicit stack options win over the run config's guidance endpoint.
        url = options.upstream_url or config.guidance_base_url
        if not url:
            raise StackError(
                "training is off, so Reef runs in upstream mode and needs the guidance endpoint: "
                "set guidance_base_url in the run config (--ak guidance_base_url=URL), "
                "or pass --upstream-url URL (and --upstream-model NAME)"
            )
        upstream = (
            _provider_root(url),
            options.upstream_model or config.guidance_upstream_model or config.guidance_model,
        )
    gpus = [g for g in options.trainer_gpus.split(",") if g.strip()]
    placement = Placement(host, port, directory, state_dir, len(gpus), deadline)
    return Plan(config, options, training, placement, upstream)


def _provider_root(url: str) -> str:
    """Reef wants the provider's root URL; OpenAI clients' base URLs end in `/v1`."""
    root = url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def mode(plan: Plan) -> str:
    return "training" if plan.training else "search-only"
