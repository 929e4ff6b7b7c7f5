"""Euler rollouts on a Ray cluster (`--ray ADDRESS|auto`): the driver's side.

Each rollout is one Ray task on a node that advertises the `atoll_docker`
resource (one unit per rollout it may run at a time); the node runs
`cluster_node.rollout` and sends the rollout directory back, which the
driver unpacks where a local rollout would have written it. The driver stays
the only writer of rows. Ray's own task retries are off: a node lost
mid-rollout surfaces here as `NodeLost`, the caller records it as an
infrastructure failure and retries once on another node, so a rollout is
never counted twice nor charged to the model.

Ray is optional (`atoll-euler[ray]`): it is imported only when a cluster is
asked for. Nothing secret goes through Ray: the model's key stays in each
node's environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

from atoll.core.termination import sigterm_kept
from atoll.euler import cluster_node
from atoll.euler.cluster_node import RemoteRollout

RESOURCE = "atoll_docker"
INSTALL_HINT = "pip install 'atoll-euler[ray]'"


class ClusterError(Exception):
    """The cluster cannot run rollouts (no Ray, no node, a node not ready); one line says why."""


class NodeLost(Exception):
    """The node running a rollout went away (or its worker died) before the rollout came back."""

    def __init__(self, node_id: str | None, message: str) -> None:
        super().__init__(message)
        self.node_id = node_id


class RemoteFailure(Exception):
    """The rollout failed on its node as it would locally (the engine, Pi, the workspace)."""


def job_for(request: Any) -> RemoteRollout:
    """A rollout request as a node gets it: files as bytes, the system prompt as text."""
    settings = request.settings
    prompt_text = settings.system_prompt_text()
    return RemoteRollout(
        prompt=request.prompt,
        settings=settings.model_copy(update={"system_prompt": None}),
        system_prompt=prompt_text,
        language=request.language,
        files={
            name: source.read_bytes() if isinstance(source, Path) else source
            for name, source in request.files.items()
        },
        image=request.image,
        metadata=dict(request.metadata),
    )


class Cluster:
    """A joined Ray cluster and the two remote functions a run needs."""

    def __init__(self, ray: Any, address: str) -> None:
        self.ray = ray
        self.address = address
        self.lost: set[str] = set()
        self._rollout = ray.remote(num_cpus=0, resources={RESOURCE: 1}, max_retries=0)(
            cluster_node.rollout
        )
        self._preflight = ray.remote(num_cpus=0, max_retries=0)(cluster_node.preflight)

    def docker_nodes(self) -> list[dict[str, Any]]:
        """The live nodes that advertise Docker, as Ray lists them (not known lost here)."""
        return [
            node
            for node in self.ray.nodes()
            if node.get("Alive")
            and float((node.get("Resources") or {}).get(RESOURCE, 0)) > 0
            and node["NodeID"] not in self.lost
        ]

    def slots(self) -> int:
        """How many rollouts the cluster runs at once: its `atoll_docker` units."""
        return max(1, int(sum(float(n["Resources"][RESOURCE]) for n in self.docker_nodes())))

    def preflight(self, settings: Any, image: str | None) -> dict[str, Any]:
        """Each Docker node's key, engine, image and Pi; the image they all have, as JSON."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self.docker_nodes()
        if not nodes:
            raise ClusterError(
                f"no live node of the Ray cluster at {self.address} advertises {RESOURCE}: "
                f"start each rollout node with `ray start ... --resources='{{\"{RESOURCE}\": N}}'`"
            )
        plain = settings.model_copy(update={"system_prompt": None})
        refs = [
            self._preflight.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote(plain, image)
            for node in nodes
        ]
        try:
            answers = self.ray.get(refs)
        except self.ray.exceptions.RayError as exc:
            raise ClusterError(f"a node failed its preflight: {_first_line(exc)}") from None
        for answer in answers:
            if answer["error"]:
                raise ClusterError(f"node {_name(answer)}: {answer['error']}")
        images = {answer["image"]["image_id"] for answer in answers}
        if len(images) > 1:
            listed = ", ".join(f"{_name(a)} has {a['image']['image_id'][:19]}" for a in answers)
            raise ClusterError(
                f"the nodes' rollout images differ ({listed}): load one image on every node "
                "and name it with --image"
            )
        return dict(answers[0]["image"])

    async def rollout(self, job: RemoteRollout, *, avoid: str | None = None) -> tuple[bytes, str]:
        """Run `job` on a Docker node (another than `avoid`): the packed directory and the node."""
        options: dict[str, Any] = {"num_returns": "streaming"}
        if avoid is not None:
            options["scheduling_strategy"] = self._elsewhere(avoid)
        stream = self._rollout.options(**options).remote(job)
        node: str | None = None
        outcome: dict[str, Any] = {}
        try:
            async for ref in stream:
                item = await ref
                if "node_id" in item:
                    node = str(item["node_id"])
                else:
                    outcome = item
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self.ray.cancel(stream)
            raise
        except self.ray.exceptions.RayTaskError as exc:
            raise RemoteFailure(_first_line(exc)) from None
        except self.ray.exceptions.RayError as exc:  # the node died, its worker crashed
            if node is not None:
                self.lost.add(node)
            where = "an unknown node" if node is None else f"node {node[:12]}"
            raise NodeLost(node, f"{type(exc).__name__} on {where}: {_sentence(exc)}") from None
        return self._result(outcome, node)

    def _result(self, outcome: dict[str, Any], node: str | None) -> tuple[bytes, str]:
        from atoll.pi.rollout import RolloutRefused

        if "refused" in outcome:
            raise RolloutRefused(outcome["refused"])
        if "error" in outcome:
            raise RemoteFailure(str(outcome["error"]))
        if "archive" not in outcome or node is None:
            raise RemoteFailure("the node sent no rollout back")
        return outcome["archive"], node

    def _elsewhere(self, avoid: str) -> Any:
        """A hard placement on a live Docker node other than `avoid` (and other lost ones)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.lost.add(avoid)
        others = self.docker_nodes()
        if not others:
            raise NodeLost(avoid, f"no other node advertises {RESOURCE} to retry on")
        best = max(others, key=lambda n: float(n["Resources"][RESOURCE]))
        return NodeAffinitySchedulingStrategy(best["NodeID"], soft=False)


def connect(address: str) -> Cluster:
    """Join the cluster at `address` (`auto`: the one this machine runs), or one error line.

    The nodes run their own installed atoll: under `uv run` Ray would otherwise ship this
    checkout and rebuild its environment on every node (RAY_ENABLE_UV_RUN_RUNTIME_ENV).
    """
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise ClusterError(f"--ray needs Ray on this machine: {INSTALL_HINT}") from None
    if not ray.is_initialized():
        try:
            with sigterm_kept():  # Ray's own SIGTERM handler would outlive `ray.shutdown()`
                ray.init(
                    address=address,
                    namespace="atoll-euler",
                    log_to_driver=False,
                    logging_level=logging.ERROR,
                    runtime_env={},
                )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(
                f"cannot join the Ray cluster at {address}: {_first_line(exc)}"
            ) from None
    return Cluster(ray, address)


def _name(answer: dict[str, Any]) -> str:
    return f"{answer.get('host')} ({str(answer.get('node_id'))[:12]})"


def _sentence(exc: BaseException) -> str:
    """The first sentence of Ray's message (the rest is advice on Ray's own tools)."""
    return _first_line(exc).split(". ")[0].rstrip(".")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
