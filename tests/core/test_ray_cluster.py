"""The tests' local Ray cluster: two workers that both take tasks, loopback only, no dashboard,
and nothing left of a node once it is killed or the cluster torn down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.ray_cluster import LocalRayCluster, group_members, local_ray_cluster

pytestmark = pytest.mark.slow

# Each task holds a judge slot for a moment and says which node ran it.
_WHERE = """
import json, time, ray
ray.init(address="{address}", logging_level="ERROR", log_to_driver=False)

@ray.remote(num_cpus=0, resources={{"atoll_judge": 1}})
def where():
    time.sleep(0.3)
    return ray.get_runtime_context().get_node_id()

print("ran on:", json.dumps(ray.get([where.remote() for _ in range(8)])))
"""


def _drive(cluster: LocalRayCluster, script: str) -> str:
    """What a driver of the cluster running `script` prints after `ran on: `."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the driver hung: {e.stderr!r:.3000}") from None
    assert done.returncode == 0, done.stderr[-3000:]
    # Ray may print its own warnings (a lagging raylet) on stdout too.
    answer = [line for line in done.stdout.splitlines() if line.startswith("ran on: ")]
    assert answer, done.stdout[-3000:]
    return answer[-1].removeprefix("ran on: ")


def _cluster_pids(cluster: LocalRayCluster) -> list[int]:
    nodes = [cluster.head, *cluster.workers]
    return [pid for node in nodes if node is not None for pid in group_members(node.pgid)]


def _socket_inodes(pids: list[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
        except OSError:
            continue
    return inodes


def _listening(inodes: set[str]) -> list[str]:
    """The local addresses (hex, as /proc/net writes them) of listening TCP and bound UDP sockets."""
    found = []
    for table, listen_state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            if fields[3] == listen_state and fields[9] in inodes:
                found.append(f"{table} {fields[1]}")
    return found


def _is_loopback(entry: str) -> bool:
    table, local = entry.split()
    address = local.split(":")[0]
    if table in ("tcp", "udp"):
        return address.endswith("7F")  # little-endian 127.x.x.x
    mapped_loopback = address[:24] == "0000000000000000FFFF0000" and address[30:] == "7F"
    return address == "00000000000000000000000001000000" or mapped_loopback


def test_tasks_land_on_both_workers(ray_cluster: LocalRayCluster) -> None:
    ran_on = json.loads(_drive(ray_cluster, _WHERE.format(address=ray_cluster.address)))
    assert {ray_cluster.worker_of(node) for node in ran_on} == {0, 1}
    head = ray_cluster.head
    assert head is not None and head.node_id not in ran_on


def test_the_cluster_listens_on_loopback_only_with_no_dashboard(
    ray_cluster: LocalRayCluster,
) -> None:
    pids = _cluster_pids(ray_cluster)
    listening = _listening(_socket_inodes(pids))
    assert listening, "the cluster's processes listen nowhere: the scan found no sockets"
    assert [entry for entry in listening if not _is_loopback(entry)] == []
    # With the dashboard off Ray's head still runs its API server for usage reports only:
    # no frontend, and (as the scan above shows for all) no port beyond loopback; here, none.
    api_servers = [pid for pid in pids if b"dashboard/dashboard.py" in _cmdline(pid)]
    for pid in api_servers:
        assert b"--disable-frontend" in _cmdline(pid).split(b"\0")
        assert _listening(_socket_inodes([pid])) == [], "the dashboard serves"


def test_a_killed_worker_leaves_no_process(ray_cluster: LocalRayCluster) -> None:
    node = ray_cluster.workers[1]
    assert group_members(node.pgid)
    ray_cluster.kill_node(1)
    assert group_members(node.pgid) == []
    assert ray_cluster.live_workers() == [0]


def test_teardown_leaves_no_process_and_no_files(tmp_path: Path) -> None:
    # A head alone: its teardown is every node's (the same killpg), at a third of the cost.
    with local_ray_cluster([]) as cluster:
        pids = _cluster_pids(cluster)
        root = cluster.root
        assert len(pids) > 3 and root.is_dir()
    assert [pid for pid in pids if os.path.exists(f"/proc/{pid}") and _alive(pid)] == []
    assert not root.exists()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"
