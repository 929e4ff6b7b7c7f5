"""Shared test configuration."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


#: Session fixtures that stand for one costly shared thing: every test that uses one runs on
#: the same xdist worker (`--dist loadgroup`), so the thing is built once, not once per worker.
#: The first match in this order wins. Guidance-TTT's two tests that train its guidance model
#: share one server of it; the local Ray cluster (a head and two nodes) serves every Ray test.
#: pi-train's server of the tiny model is not here: its tests are about twenty minutes of
#: training in all, which one worker alone would take longer to run than the whole rest of
#: the suite, so each worker that runs one starts a server of its own.
SHARED_SESSION_FIXTURES: tuple[tuple[str, str], ...] = (
    ("guidance_server_env", "tinker-guidance"),
    ("ray_cluster_session", "ray"),
)


def resource_group(item: pytest.Item) -> str | None:
    """The xdist group of a test: the shared resource it needs, or None to run anywhere."""
    fixtures = set(getattr(item, "fixturenames", ()))
    for fixture, group in SHARED_SESSION_FIXTURES:
        if fixture in fixtures:
            return group
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = resource_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    # xdist hands tests out in collection order: a test of many minutes that came late would
    # still run after the others had ended and decide the suite's wall time alone. The sort is
    # stable, so every worker collects the same order.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


#: Threads of the compute libraries in every process the tests start. Test workers run side
#: by side on few cores; a torch or XLA pool sized to the whole machine in each of them spins
#: on its barriers while the others hold the cores, which made one CPU training 20 times slower.
SINGLE_THREADED = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}
for _name, _value in SINGLE_THREADED.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(autouse=True)
def docker_engine_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """A Docker test holds the engine shared, or alone when marked `docker_engine_alone`."""
    if request.node.get_closest_marker("docker") is None:
        yield
        return
    from support.engine_lock import engine_held

    from atoll.core.sandbox.docker_backend import engine_url

    alone = request.node.get_closest_marker("docker_engine_alone") is not None
    with engine_held(engine_url(), exclusive=alone):
        yield


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers a core (up to 8), since most tests wait on subprocesses and Docker.

    `ATOLL_TEST_WORKERS` overrides it (`-n 0` runs everything in this process).
    """
    chosen = os.environ.get("ATOLL_TEST_WORKERS")
    if chosen:
        return int(chosen)
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def pytest_configure(config: pytest.Config) -> None:
    """xdist's groups are kept (GroupedNodeIds); Ctrl-C is handled as in a terminal, however
    the suite was launched.

    A script's background job starts with SIGINT ignored, and the commands the
    tests start would inherit that: the tests of Ctrl-C handling would then test
    nothing. Python's own handler is reset to the default in every child.
    """
    from support.xdist_groups import GroupedNodeIds

    config.pluginmanager.register(GroupedNodeIds(), "atoll-grouped-node-ids")
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def shared_judges_left_idle() -> Iterator[None]:
    """After each test, the judges that tests share have nothing under way (see
    `support.judge.shared`); none is open where none was imported."""
    yield
    judges = sys.modules.get("support.judge")
    if judges is not None:
        judges.wait_for_open_judges()


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def venv_bin() -> Path:
    """The bin directory of the environment the tests run in (for its console scripts)."""
    return Path(sys.executable).parent


# One tiny model and one local Tinker server for every test that trains or samples on
# Tinker (pi-train's and Guidance-TTT's): each module starting its own SkyRL tx would pay
# the engine's start and its shape compiles again. The model is built once for the whole
# run, the server started once per xdist worker (the training states a test makes live in
# its worker's server). The server's teardown checks that `atoll tinker local down`
# leaves no process behind.


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, venv_bin: Path) -> Iterator[Path]:
    """The seed-3 tiny Qwen3 model and its tokenizer, built once for all the workers of the run.

    The servers and trainers only read it (support/shared_build.py checks that at the end).
    """
    from support.shared_build import run_root, shared_build
    from support.tinker_local import make_tiny_model

    def build(files: Path) -> dict[str, Any]:
        make_tiny_model(venv_bin, dict(os.environ), files / "model", seed=3)
        return {"seed": 3}

    built = shared_build(run_root(tmp_path_factory), "tiny-model", build)
    yield built.files / "model"
    built.assert_unchanged()


@pytest.fixture(scope="session")
def server_env(
    tmp_path_factory: pytest.TempPathFactory, venv_bin: Path, tiny_model: Path
) -> Iterator[dict[str, str]]:
    """The environment with the shared local server's exports (TINKER_BASE_URL, TINKER_API_KEY)."""
    from support.tinker_local import local_server

    with local_server(
        venv_bin, dict(os.environ), tmp_path_factory.mktemp("local"), tiny_model
    ) as env:
        yield env


# One local Ray cluster (a head and two worker nodes on loopback) for every test that runs
# judging or rollouts on Ray: starting one costs tens of seconds on two cores. Each worker
# offers one judge slot and one Docker slot. A test that kills a worker gets it replaced
# before the next test that asks for the cluster (`ray_cluster` revives it).

RAY_WORKER_RESOURCES = {"atoll_judge": 1.0, "atoll_docker": 1.0}


@pytest.fixture(scope="session")
def ray_cluster_session() -> Iterator[Any]:
    import importlib.util

    from support.ci import need
    from support.euler_cli import RAY_NODE_ENV
    from support.ray_cluster import local_ray_cluster

    need(importlib.util.find_spec("ray") is not None, "needs ray", "the dev group installs it")
    with local_ray_cluster(
        [RAY_WORKER_RESOURCES, RAY_WORKER_RESOURCES], node_env=RAY_NODE_ENV
    ) as cluster:
        yield cluster


@pytest.fixture
def ray_cluster(ray_cluster_session: Any) -> Any:
    """The shared local Ray cluster with both its workers up (a killed one is replaced first,
    so that the last test to kill one does not pay for its replacement)."""
    ray_cluster_session.revive()
    return ray_cluster_session
