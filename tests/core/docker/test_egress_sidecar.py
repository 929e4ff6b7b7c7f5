"""The offline egress sidecar, run directly as Harbor runs it, against a real listener.

A TCP listener on this host (bound to 0.0.0.0) is reached from a user-defined
bridge network through the network's gateway address. Probes run in a second
container that shares the sidecar's network namespace, as Harbor's `main`
service does, so each test shows what the policy does to the task's traffic.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from egress_listener import Listener

from atoll.core.docker_engine import egress_sidecar

pytestmark = [pytest.mark.docker, pytest.mark.timeout(120)]

READY_FILE = "/tmp/harbor-docker-egress-control-sidecar.ready"
OTHER_ADDRESS = "192.0.2.7"  # TEST-NET-1: never the gateway
PROBE = """
import socket, sys, time
began = time.monotonic()
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=8) as conn:
        conn.sendall(sys.argv[3].encode() + b"\\n")
        conn.recv(16)
    print("reached", round(time.monotonic() - began, 3))
except OSError as exc:
    print("blocked", type(exc).__name__, round(time.monotonic() - began, 3))
"""


@pytest.fixture(scope="module")
def client(docker_host: str) -> Iterator[Any]:
    import docker

    engine = docker.DockerClient(base_url=docker_host, version="auto", timeout=60)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def sidecar_image(client: Any) -> str:
    return egress_sidecar.ensure_sidecar_image(client).tag


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@dataclass
class Namespace:
    sidecar: Any
    main: Any
    gateway: str


@pytest.fixture(scope="module")
def network(client: Any) -> Iterator[tuple[Any, str]]:
    net = client.networks.create(f"atoll-egress-{uuid.uuid4().hex[:8]}", driver="bridge")
    net.reload()
    gateway = net.attrs["IPAM"]["Config"][0]["Gateway"]
    yield net, gateway
    net.remove()


def start_namespace(
    client: Any, image: str, network: tuple[Any, str], environment: dict[str, str]
) -> Namespace:
    net, gateway = network
    sidecar = client.containers.run(
        image,
        name=f"atoll-egress-{uuid.uuid4().hex[:8]}",  # named containers get a DNS name
        detach=True,
        init=True,
        cap_add=["NET_ADMIN", "NET_RAW"],
        network=net.name,
        environment=environment,
        extra_hosts={"listener.test": gateway},
    )
    main = client.containers.run(
        "atoll/base:bookworm",
        ["sleep", "infinity"],
        detach=True,
        init=True,
        network_mode=f"container:{sidecar.id}",
    )
    for _ in range(100):
        if sidecar.exec_run(["test", "-f", READY_FILE]).exit_code == 0:
            break
        sidecar.reload()
        assert sidecar.status == "running", sidecar.logs().decode()
        threading.Event().wait(0.1)
    else:
        raise AssertionError(f"sidecar never became ready: {sidecar.logs().decode()}")
    return Namespace(sidecar, main, gateway)


def stop_namespace(space: Namespace) -> None:
    for container in (space.main, space.sidecar):
        container.remove(force=True)


@pytest.fixture(scope="module")
def space(client, sidecar_image, network) -> Iterator[Namespace]:
    started = start_namespace(
        client, sidecar_image, network, {"EGRESS_CONTROL_INITIAL_NETWORK_MODE": "public"}
    )
    yield started
    stop_namespace(started)


def policy(space: Namespace, *args: str) -> tuple[int, str, str]:
    done = space.sidecar.exec_run(["network-policy", *args], demux=True)
    out, err = done.output
    return done.exit_code, (out or b"").decode(), (err or b"").decode()


def probe(space: Namespace, listener: Listener, token: str, host: str | None = None) -> list[str]:
    done = space.main.exec_run(
        ["python3", "-c", PROBE, host or space.gateway, str(listener.port), token]
    )
    assert done.exit_code == 0, done.output.decode()
    return done.output.decode().split()


def assert_reached(space: Namespace, listener: Listener, token: str) -> None:
    result = probe(space, listener, token)
    assert result[0] == "reached", result
    assert token in listener.tokens


def assert_refused_fast(space: Namespace, listener: Listener, token: str) -> None:
    result = probe(space, listener, token)
    assert result[:2] == ["blocked", "ConnectionRefusedError"], result
    assert float(result[2]) < 1.0, result  # a TCP reset, not a timeout
    assert token not in listener.tokens


def test_harbor_finds_the_sidecar_under_its_own_name(atoll_cmd, docker_host, client, monkeypatch):
    from harbor.environments.docker.docker import DockerEnvironment
    from harbor.environments.docker.utils import (
        default_docker_platform,
        ensure_docker_image_built,
    )

    up = subprocess.run(
        [*atoll_cmd, "docker", "up"],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "TERM": "dumb"},
    )
    assert up.returncode == 0, up.stderr
    monkeypatch.setenv("DOCKER_HOST", docker_host)

    async def harbors_choice() -> str:
        # Returns at once if the image exists; otherwise it would try to pull and fail.
        return await ensure_docker_image_built(
            docker_name=DockerEnvironment._EGRESS_CONTROL_SIDECAR_DOCKER_NAME,
            docker_build_context=DockerEnvironment._EGRESS_CONTROL_SIDECAR_CONTEXT_PATH,
            dockerfile_path=DockerEnvironment._egress_control_sidecar_dockerfile_path(),
            build_args={},
            platform=await default_docker_platform(),
        )

    name = asyncio.run(asyncio.wait_for(harbors_choice(), 60))
    labels = client.images.get(name).labels
    assert labels[egress_sidecar.FINGERPRINT_LABEL] == egress_sidecar.fingerprint(
        client.images.get("atoll/base:bookworm").id
    )
    assert name in up.stderr
    status = subprocess.run(
        [*atoll_cmd, "docker", "status"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TERM": "dumb", "COLUMNS": "300"},
    )
    assert f"sidecar:     {name} {client.images.get(name).id}" in status.stdout


def test_public_reaches_the_host(space, listener):
    assert policy(space, "show")[1].startswith("mode: allow-all")
    assert_reached(space, listener, "public")


def test_deny_all_refuses_fast_but_keeps_loopback(space, listener):
    code, out, err = policy(space, "deny-all")
    assert code == 0, err
    assert_refused_fast(space, listener, "denied")
    loopback = space.main.exec_run(
        [
            "python3",
            "-c",
            "import socket; s = socket.create_server(('127.0.0.1', 0)); "
            "socket.create_connection(s.getsockname(), timeout=3).close(); print('loopback')",
        ]
    )
    assert loopback.output.decode().strip() == "loopback"
    # Docker's embedded DNS (127.0.0.11) is loopback too: names still resolve.
    dns = space.main.exec_run(["getent", "hosts", space.sidecar.name])
    assert dns.exit_code == 0, dns.output.decode()
    assert "mode: deny-all" in policy(space, "rules")[1]
    policy(space, "allow-all")
    assert_reached(space, listener, "public-again")


def test_allow_the_gateway_address_reaches_it(space, listener):
    code, _, err = policy(space, "allow", space.gateway)
    assert code == 0, err
    assert_reached(space, listener, "allowed-address")


def test_allow_another_address_refuses(space, listener):
    code, _, err = policy(space, "allow", OTHER_ADDRESS)
    assert code == 0, err
    assert_refused_fast(space, listener, "other-address")


def test_allow_a_cidr_containing_the_gateway_reaches_it(space, listener):
    cidr = space.gateway.rsplit(".", 2)[0] + ".0.0/16"
    code, _, err = policy(space, "allow", OTHER_ADDRESS, cidr)
    assert code == 0, err
    assert_reached(space, listener, "allowed-cidr")


def test_allow_a_hostname_resolves_it_when_applied(space, listener):
    code, out, err = policy(space, "allow", "listener.test")
    assert code == 0, err
    assert f"listener.test -> {space.gateway}" in out
    assert_reached(space, listener, "allowed-hostname")


def test_wildcard_exits_2_and_keeps_the_previous_policy(space, listener):
    assert policy(space, "allow", OTHER_ADDRESS)[0] == 0
    before = policy(space, "rules")[1]
    code, out, err = policy(space, "allow", space.gateway, "*.example.com")
    assert code == 2
    assert err.count("\n") == 1 and "*.example.com" in err and "proxy" in err
    assert policy(space, "rules")[1] == before
    assert_refused_fast(space, listener, "after-wildcard")


def test_initial_allowlist_comes_from_the_environment(client, sidecar_image, network, listener):
    _, gateway = network
    started = start_namespace(
        client,
        sidecar_image,
        network,
        {
            "EGRESS_CONTROL_INITIAL_NETWORK_MODE": "allowlist",
            "EGRESS_CONTROL_INITIAL_ALLOWED_HOSTS": f"{OTHER_ADDRESS} {gateway}",
        },
    )
    try:
        assert_reached(started, listener, "initial-allowlist")
        assert policy(started, "allow", OTHER_ADDRESS)[0] == 0
        assert_refused_fast(started, listener, "initial-then-other")
    finally:
        stop_namespace(started)
