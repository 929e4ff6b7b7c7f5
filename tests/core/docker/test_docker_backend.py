"""What only the Docker backend does: image pinning, labels, cleanup, engine errors.

The behaviours every backend shares are checked by the conformance suite (tests/core/sandbox).
"""

from __future__ import annotations

import _thread
import dataclasses
import threading
import time

import docker
import pytest

from atoll.core.sandbox import CancelToken, Limits, Network, SandboxError, SandboxSpec, Status
from atoll.core.sandbox.docker_backend import LABEL, OWNER_LABEL, DockerBackend, owner
from atoll.core.sandbox.docker_cgroup import leftovers as cgroup_leftovers

pytestmark = [pytest.mark.docker, pytest.mark.timeout(120)]

UID = 61000 + 7


@pytest.fixture(scope="module")
def backend(docker_host: str) -> DockerBackend:
    chosen = DockerBackend(docker_host)
    chosen.check()
    return chosen


@pytest.fixture
def spec() -> SandboxSpec:
    return SandboxSpec(uid=UID, gid=UID, limits=Limits(cpu_seconds=5, wall_seconds=20))


@pytest.fixture(autouse=True)
def nothing_left_behind(backend: DockerBackend):
    yield
    assert backend.leftovers() == []
    assert cgroup_leftovers() == []


def test_runs_the_image_pinned_by_its_id(backend, spec, docker_host, base_image):
    client = docker.DockerClient(base_url=docker_host, version="auto")
    try:
        image_id = client.images.get(base_image).id
    finally:
        client.close()
    assert backend.resolve_image(base_image) == image_id
    assert image_id.startswith("sha256:")
    pinned = dataclasses.replace(spec, image=image_id)
    result = backend.run(["sh", "-c", "python3 --version && g++ --version"], pinned)
    assert result.ok, result.stderr
    assert result.stdout.startswith(b"Python 3.11")


def test_unknown_image_is_an_infrastructure_error(backend, spec):
    with pytest.raises(SandboxError, match="not in the Docker engine"):
        backend.run(["true"], dataclasses.replace(spec, image="atoll/no-such-image:1"))


def test_no_engine_is_one_clear_error(tmp_path):
    backend = DockerBackend(f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(SandboxError, match="atoll docker up"):
        backend.check()


def test_network_none_leaves_only_loopback(backend, spec):
    for network in (Network.NONE, Network.LOOPBACK):
        result = backend.run(["ls", "/sys/class/net"], dataclasses.replace(spec, network=network))
        assert result.ok and result.stdout.split() == [b"lo"]


def test_running_container_is_labelled_and_locked_down(backend, spec, docker_host):
    client = docker.DockerClient(base_url=docker_host, version="auto")
    seen: list[dict] = []

    def look() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not seen:
            for found in client.api.containers(filters={"label": f"{OWNER_LABEL}={owner()}"}):
                seen.append(client.api.inspect_container(found["Id"]))
            time.sleep(0.05)

    limited = dataclasses.replace(
        spec,
        limits=dataclasses.replace(spec.limits, memory_bytes=100 * 2**20, processes=20, cpus=0.5),
    )
    watcher = threading.Thread(target=look)
    watcher.start()
    try:
        result = backend.run(["sleep", "2"], limited)
    finally:
        watcher.join()
        client.close()
    assert result.ok
    assert seen, "no labelled container was seen while the command ran"
    details = seen[0]
    host = details["HostConfig"]
    assert details["Config"]["Labels"][LABEL] == "1"
    assert details["Config"]["User"] == f"{UID}:{UID}"
    assert details["Image"] == backend.resolve_image("atoll/base:bookworm")
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Memory"] == host["MemorySwap"] == 100 * 2**20
    assert host["PidsLimit"] == 21  # the program's 20 and docker-init
    assert host["NanoCpus"] == 500_000_000
    assert host["Binds"] in (None, [])


def test_ctrl_c_removes_the_container(backend, spec):
    timer = threading.Timer(1.5, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        backend.run(["sleep", "30"], spec)
    timer.cancel()
    assert time.monotonic() - started < 10
    # The autouse fixture checks that neither container nor cgroup is left.


def test_another_thread_can_cancel_a_run(backend, spec):
    token = CancelToken()
    timer = threading.Timer(1.0, token.cancel)
    started = time.monotonic()
    timer.start()
    try:
        result = backend.run(["sleep", "30"], spec, cancel=token)
    finally:
        timer.cancel()
        token.close()
    assert result.status is Status.WALL_TIME_LIMIT
    assert 1.0 <= time.monotonic() - started < 10


def test_peak_memory_and_cpu_are_measured(backend, spec):
    code = "import time\nblock = bytearray(80 * 2**20)\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass"
    result = backend.run(["python3", "-c", code], spec)
    assert result.ok, result.stderr
    assert 80 * 2**20 <= result.peak_memory_bytes <= 200 * 2**20
    assert 0.3 <= result.cpu_seconds <= 3


def test_out_of_memory_from_the_engine(backend, spec):
    limited = dataclasses.replace(
        spec, limits=dataclasses.replace(spec.limits, memory_bytes=64 * 2**20)
    )
    result = backend.run(["python3", "-c", "block = bytearray(200 * 2**20)"], limited)
    assert result.status is Status.MEMORY_LIMIT
    assert result.signal == 9
