"""Harbor's `allowlist` network mode on atoll-local: nftables rules on the trial's uids.

The box shares the host's network, so listeners on two loopback addresses of
the host (127.0.0.1 and 127.0.0.2, both local) stand for an allowed and a
forbidden destination.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from harbor.models.task.config import NetworkMode, NetworkPolicy
from support import ci
from support.local_env import local_environment

from atoll.core.environments import egress_rules
from atoll.core.environments.local import LocalEnvironment

# With test_allowlist_trial, the only tests that make atoll-local allowlist tables.
pytestmark = [pytest.mark.timeout(120), pytest.mark.xdist_group("nftables")]


@pytest.fixture(autouse=True)
def allowlist_tables_turn() -> Iterator[None]:
    """Shared among these, never beside test_allowlist_trial, which counts every table."""
    from support.engine_lock import engine_held

    with engine_held("nftables allowlist tables", exclusive=False):
        yield


TASK = Path(__file__).parent / "tasks" / "write-a-file"


@pytest.fixture(autouse=True)
def _needs_nftables() -> None:
    ci.need(egress_rules.supported(), "allowlists need root and a working nft here")


@pytest.fixture
def listeners() -> Iterator[dict[str, int]]:
    """Accepting TCP servers of the host, by address: the port each listens on."""
    servers = [socket.create_server((host, 0)) for host in ("127.0.0.1", "127.0.0.2")]
    servers.append(socket.create_server(("::1", 0), family=socket.AF_INET6))
    try:
        yield {s.getsockname()[0]: s.getsockname()[1] for s in servers}
    finally:
        for server in servers:
            server.close()


def make_env(tmp_path: Path, network: NetworkMode, hosts: list[str] | None = None):
    return local_environment(
        tmp_path / "trial",
        TASK / "environment",
        "write-a-file",
        network=network,
        allowed_hosts=hosts,
    )


def run(tmp_path, scenario, network=NetworkMode.ALLOWLIST, hosts=None):
    """Start an environment, run `scenario(env)`, always stop it; its table may not be left.

    Only this environment's table is looked for: other trials on the host (tests
    running beside this one) have tables of their own while they run.
    """

    async def main():
        env = make_env(tmp_path, network, hosts)
        await env.start(force_build=False)
        try:
            return await scenario(env)
        finally:
            await env.stop(delete=True)
            assert table_of(env) is None

    return asyncio.run(main())


def table_of(env: LocalEnvironment) -> str | None:
    done = subprocess.run(
        [egress_rules.nft_command(), "list", "table", "inet", f"atoll_local_{env.root.uids.start}"],
        capture_output=True,
        text=True,
    )
    return done.stdout if done.returncode == 0 else None


async def probe(env: LocalEnvironment, listeners: dict[str, int]) -> dict[str, tuple[bool, int]]:
    """From inside the box: whether each listener answers, and how many ms the try took."""
    script = "; ".join(
        f"s=$(date +%s%N); if (exec 3<>/dev/tcp/{host}/{port}) 2>/dev/null; "
        f'then r=ok; else r=no; fi; echo "{host} $r $(( ($(date +%s%N) - s) / 1000000 ))"'
        for host, port in listeners.items()
    )
    result = await env.exec(script, timeout_sec=30)
    assert result.return_code == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        host, outcome, ms = line.split()
        found[host] = (outcome == "ok", int(ms))
    return found


def reached(found: dict[str, tuple[bool, int]]) -> set[str]:
    return {host for host, (ok, _) in found.items() if ok}


def test_only_listed_address_is_reached_and_others_fail_fast(tmp_path, listeners):
    def host_connects(host: str) -> bool:
        with socket.create_connection((host, listeners[host]), timeout=5):
            return True

    async def scenario(env):
        found = await probe(env, listeners)
        # The host's own processes (this test runs as root) are not filtered.
        host_view = {host: host_connects(host) for host in listeners}
        return found, host_view, table_of(env)

    found, host_view, table = run(tmp_path, scenario, hosts=["127.0.0.1"])
    assert reached(found) == {"127.0.0.1"}
    assert found["127.0.0.2"][1] < 1000 and found["::1"][1] < 1000
    assert all(host_view.values())
    assert table is not None and "dport 53" not in table  # no hostnames, so no DNS


def test_cidr_and_ipv6_address(tmp_path, listeners):
    async def scenario(env):
        return await probe(env, listeners)

    found = run(tmp_path, scenario, hosts=["127.0.0.2/31", "::1"])
    assert reached(found) == {"127.0.0.2", "::1"}


def test_hostname_is_resolved_on_the_host(tmp_path, listeners):
    async def scenario(env):
        return await probe(env, listeners), table_of(env)

    found, table = run(tmp_path, scenario, hosts=["localhost"])
    assert "127.0.0.1" in reached(found) and "127.0.0.2" not in reached(found)
    nameservers = [str(a) for a in egress_rules.nameservers()]
    assert all(server in table for server in nameservers) and "dport 53" in table


def test_phase_switches_and_a_failed_switch_keeps_the_policy(tmp_path, listeners):
    async def scenario(env):
        seen = {"allowlist": reached(await probe(env, listeners))}
        await env.set_network_policy(NetworkPolicy(network_mode=NetworkMode.PUBLIC))
        seen["public"] = reached(await probe(env, listeners)), table_of(env)
        await env.set_network_policy(NetworkPolicy(network_mode=NetworkMode.NO_NETWORK))
        seen["no-network"] = reached(await probe(env, listeners)), table_of(env)
        await env.set_network_policy(
            NetworkPolicy(network_mode=NetworkMode.ALLOWLIST, allowed_hosts=["127.0.0.2"])
        )
        seen["other allowlist"] = reached(await probe(env, listeners))
        bad = NetworkPolicy(network_mode=NetworkMode.ALLOWLIST, allowed_hosts=["no-such.invalid"])
        with pytest.raises(egress_rules.EgressRulesError, match="'no-such.invalid' does not"):
            await env.set_network_policy(bad)
        seen["after failed switch"] = reached(await probe(env, listeners))
        return seen

    seen = run(tmp_path, scenario, hosts=["127.0.0.1"])
    assert seen == {
        "allowlist": {"127.0.0.1"},
        "public": ({"127.0.0.1", "127.0.0.2", "::1"}, None),
        "no-network": (set(), None),
        "other allowlist": {"127.0.0.2"},
        "after failed switch": {"127.0.0.2"},
    }


def test_wildcard_hostnames_are_rejected_by_harbor(tmp_path):
    with pytest.raises(ValueError, match="allowlist' with wildcard hostnames is not supported"):
        make_env(tmp_path, NetworkMode.ALLOWLIST, ["*.example.com"])
