"""A real Ray cluster on this machine for tests: a head and worker nodes, all on loopback.

Each node is one `ray start --block` in its own session: the blocking process
keeps the node's daemons (raylet, agents, workers) in its process group, so
SIGKILL to that group is a machine lost mid-run, and killing every group is
the teardown. `ray stop` is never used: it stops every Ray on the machine.

The head has no CPUs, so tasks land on the workers only; each worker
advertises the resources a test gives it (`atoll_judge`, `atoll_docker`) and
a small object store. The dashboard is off and every node keeps to loopback
(see support/ray_node.py). A driver that joins the cluster needs `env`:
without it Ray looks for the head at the machine's routable address.

Each cluster has its own authentication token, in every node's and driver's
environment: Ray's default is token authentication, and without a token in
the environment every process reads `~/.ray/auth_token`, which any local
`ray.init()` on the machine may have written with a token this cluster's head
never saw (every node's join is then refused with `InvalidAuthToken`).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from support.ports import free_port
from support.processes import pids_where

__all__ = ["DRIVER_ENV", "LocalRayCluster", "RayNode", "group_members", "local_ray_cluster"]

#: The environment of every node and of every driver that joins: loopback, no usage report,
#: and no copy of a driver's `uv run` project shipped to the workers (a driver under `uv run`,
#: as the tests are, would otherwise have every worker start through `uv run` in a copy of
#: its working directory: slow, and on an offline machine it never starts).
DRIVER_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
}

#: Each node's too: a raylet on two loaded cores can take longer than Ray's 30 s to come up.
NODE_ENV = {**DRIVER_ENV, "RAY_raylet_start_wait_time_s": "180"}

OBJECT_STORE_BYTES = 100 * 1024 * 1024
START_SECONDS = 240.0  # a node starting on two loaded cores has taken over 120 s
GONE_SECONDS = 30.0
#: Ports Ray keeps for components of its own unless told otherwise (`ray_constants`: GCS,
#: dashboard, client server, dashboard agent). `ray start` refuses a node whose port a test
#: chose at random, if that port is one of these: 52365 lies in the ephemeral range.
RAY_FIXED_PORTS = frozenset({6379, 8265, 10001, 52365})
_NODE_MAIN = Path(__file__).with_name("ray_node.py")

# The ids and resources of the cluster's live nodes, as a driver sees them.
_PROBE = """
import json, ray
ray.init(address="{address}", logging_level="ERROR", log_to_driver=False)
print("nodes:", json.dumps([
    {{"id": n["NodeID"], "port": n["NodeManagerPort"], "resources": n["Resources"]}}
    for n in ray.nodes() if n["Alive"]
]))
"""


def ray_free_port() -> int:
    """A free loopback port that Ray does not keep for one of its own components."""
    while (port := free_port()) in RAY_FIXED_PORTS:
        pass
    return port


@dataclass
class RayNode:
    """One node: its `ray start --block` process (the leader of its group) and what it offers."""

    process: subprocess.Popen[bytes]
    resources: dict[str, float]
    manager_port: int
    log: Path
    node_id: str = ""

    @property
    def pgid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None


@dataclass
class LocalRayCluster:
    """A head and its worker nodes; `workers[i]` is the i-th worker started (killed ones stay)."""

    root: Path
    port: int = field(default_factory=ray_free_port)
    head: RayNode | None = None
    workers: list[RayNode] = field(default_factory=list)
    revived: int = 0
    #: Added to each node's environment only, never a driver's: what a real machine keeps in
    #: its own environment (a model's key that rollouts on the node read).
    node_env: dict[str, str] = field(default_factory=dict)
    token: str = field(default_factory=lambda: secrets.token_hex(16))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def driver_env(self) -> dict[str, str]:
        """What a driver of this cluster adds to its environment: loopback and the token."""
        return {**DRIVER_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with what a driver of this cluster needs."""
        return {**os.environ, **self.driver_env}

    def start_head(self, seconds: float = START_SECONDS) -> None:
        """Start the head and wait until it serves (a worker started earlier would give up)."""
        self.head = self._start(
            ["--head", f"--port={self.port}", "--include-dashboard=false", "--num-cpus=0"],
            {},
            "head",
        )
        deadline = time.monotonic() + seconds
        while b"Ray runtime started" not in self.head.log.read_bytes():
            if not self.head.alive():
                raise AssertionError(f"the Ray head ended at start: {self.head.log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the Ray head did not start within {seconds} s")
            time.sleep(0.2)

    def add_worker(self, resources: Mapping[str, float], num_cpus: int = 1) -> int:
        """Start a worker node offering `resources`; its index in `workers`."""
        node = self._start(
            [f"--address={self.address}", f"--num-cpus={num_cpus}"],
            dict(resources),
            f"w{len(self.workers)}",
        )
        self.workers.append(node)
        return len(self.workers) - 1

    def _start(self, args: list[str], resources: dict[str, float], name: str) -> RayNode:
        manager_port = ray_free_port()
        log = self.root / f"{name}.log"
        command = [
            sys.executable,
            str(_NODE_MAIN),
            "start",
            "--block",
            *args,
            "--node-ip-address=127.0.0.1",
            f"--node-manager-port={manager_port}",
            f"--temp-dir={self.root / name}",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            f"--resources={json.dumps(resources)}",
            "--disable-usage-stats",
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command,
                # A state directory of its own, as a machine of its own would have.
                env={
                    **os.environ,
                    **NODE_ENV,
                    **self.driver_env,
                    **self.node_env,
                    "XDG_STATE_HOME": str(self.root / f"{name}-state"),
                },
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return RayNode(process, resources, manager_port, log)

    def wait_ready(self, seconds: float = START_SECONDS) -> None:
        """Return once every live node has joined; each gets its node id."""
        deadline = time.monotonic() + seconds
        wanted = [n for n in [self.head, *self.workers] if n is not None and n.alive()]
        while True:
            for node in wanted:
                if not node.alive():
                    raise AssertionError(
                        f"a Ray node ended at start: {node.log.read_text()[-2000:]}"
                    )
            seen = {entry["port"]: entry["id"] for entry in self.live_nodes()}
            if all(node.manager_port in seen for node in wanted):
                for node in wanted:
                    node.node_id = seen[node.manager_port]
                return
            if time.monotonic() > deadline:
                missing = [node for node in wanted if node.manager_port not in seen]
                raise AssertionError(
                    f"Ray nodes not up within {seconds} s: {seen}; missing:\n"
                    + "\n".join(_diagnosis(node) for node in missing)
                )
            time.sleep(2)  # each look is a driver's start: not too often on two cores

    def live_nodes(self) -> list[dict[str, object]]:
        """The live nodes as a driver of the cluster sees them (id, manager port, resources)."""
        done = subprocess.run(
            [sys.executable, "-c", _PROBE.format(address=self.address)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            return []
        # Ray may print its own warnings (a lagging raylet) on stdout too.
        answer = [line for line in done.stdout.splitlines() if line.startswith("nodes: ")]
        return list(json.loads(answer[-1].removeprefix("nodes: "))) if answer else []

    def worker_of(self, node_id: str) -> int:
        """The index of the worker whose node id is `node_id`."""
        return next(i for i, node in enumerate(self.workers) if node.node_id == node_id)

    def kill_node(self, index: int) -> None:
        """SIGKILL worker `index` with every process of its node: a machine lost, not a shutdown."""
        self.kill_nodes(index)

    def kill_nodes(self, *indices: int) -> None:
        """SIGKILL these workers at the same instant, then wait until each is gone: machines
        lost together (killed one after the other, the last could finish the work meanwhile)."""
        nodes = [self.workers[index] for index in indices]
        for node in nodes:
            with suppress(ProcessLookupError):
                os.killpg(node.pgid, signal.SIGKILL)
        for node in nodes:
            _kill_group(node)

    def live_workers(self) -> list[int]:
        return [i for i, node in enumerate(self.workers) if node.alive()]

    def revive(self) -> None:
        """Start a new node in place of each killed worker (same resources), so the next test
        finds the cluster it was given."""
        dead = [i for i, node in enumerate(self.workers) if not node.alive()]
        for index in dead:
            self.revived += 1
            old = self.workers[index]
            self.workers[index] = self._start(
                [f"--address={self.address}", "--num-cpus=1"],
                old.resources,
                f"w{index}r{self.revived}",
            )
        if dead:
            self.wait_ready()

    def teardown(self) -> None:
        """Kill every node's group and wait until none of their processes remains."""
        for node in [*self.workers, self.head]:
            if node is not None:
                _kill_group(node)


def _diagnosis(node: RayNode) -> str:
    """What a node that did not join says: its output and its raylet's last lines."""
    parts = [f"{node.log.name} (running: {node.alive()}): {node.log.read_text()[-1500:]}"]
    for raylet in sorted(node.log.with_suffix("").glob("session_*/logs/raylet*")):
        parts.append(f"{raylet.name}: {raylet.read_text(errors='replace')[-1500:]}")
    return "\n".join(parts)


def _kill_group(node: RayNode) -> None:
    with suppress(ProcessLookupError):
        os.killpg(node.pgid, signal.SIGKILL)
    node.process.wait()
    deadline = time.monotonic() + GONE_SECONDS
    while group_members(node.pgid):
        if time.monotonic() > deadline:
            raise AssertionError(f"Ray node processes outlived SIGKILL: {group_members(node.pgid)}")
        with suppress(ProcessLookupError):
            os.killpg(node.pgid, signal.SIGKILL)
        time.sleep(0.1)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of group `pgid`: what is left of a node."""
    return pids_where(lambda pid: os.getpgid(pid) == pgid, zombies=False)


@contextmanager
def local_ray_cluster(
    workers: list[Mapping[str, float]],
    *,
    temp_root: Path | None = None,
    node_env: Mapping[str, str] | None = None,
) -> Iterator[LocalRayCluster]:
    """A head and one worker node per entry of `workers` (its resources), up and joined.

    Each node has its own temp dir (two nodes starting at once in one would
    race for the same socket names) under one short root (Ray's unix socket
    paths must stay under ~100 characters), removed at the end; every node is killed even when the
    body fails. `node_env` goes into each node's environment (and survives `revive`).
    """
    root = Path(tempfile.mkdtemp(prefix="ray-", dir=temp_root or "/tmp"))
    cluster = LocalRayCluster(root, node_env=dict(node_env or {}))
    try:
        cluster.start_head()
        for resources in workers:
            cluster.add_worker(resources)
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.teardown()
        shutil.rmtree(root, ignore_errors=True)
