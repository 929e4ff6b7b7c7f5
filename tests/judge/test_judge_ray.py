"""`atoll judge serve --ray` on a real local Ray cluster (a head and two judge nodes).

The cases of a submission land on both nodes and the verdict is the one this
machine's engine gives; a node SIGKILLed mid-submission changes no verdict
and counts no case twice; with no node left the submission is an
infrastructure error, never a score. Nothing of the server's environment
(a key in it) reaches Ray's files.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from judge_problem_sets import make_problem_set
from support.ports import free_port
from support.processes import pids_mentioning
from support.ray_cluster import LocalRayCluster, group_members
from support.waiting import wait_for

from atoll.judge.embedded import JUDGE_URL_ENV
from atoll.judge.engine import Engine
from atoll.judge.judge_socket import SOCKET_DIR_ENV
from atoll.judge.problems import load_problems
from atoll.judge.provision import JudgeForTrials

pytestmark = pytest.mark.slow

PROGRAMS = Path(__file__).parent / "programs"
CASES = [21, 13, 1, 2, 3, 4]
# Each run of this program first sleeps (no CPU), so that a submission lasts long enough
# to lose a node in the middle of it; its output, and so its verdict, is row.cpp's.
SLOW = b"#include <unistd.h>\nstatic int slow = (usleep(700000), 0);\n"
SECRET = f"atoll-secret-{uuid.uuid4().hex}"
# What differs between two judgings of one program: times, memory and the judge's notes.
RUN_FIELDS = ("time", "wallTime", "memory", "checkTime")


@pytest.fixture(scope="module")
def problems(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_problem_set(tmp_path_factory.mktemp("ray-problems"), CASES)


@pytest.fixture(scope="module")
def local_engine(tmp_path_factory: pytest.TempPathFactory, problems: Path) -> Iterator[Engine]:
    engine = Engine(load_problems(problems), tmp_path_factory.mktemp("ray-local-state"))
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def ray_judge(
    ray_cluster_session: LocalRayCluster, problems: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """`atoll judge serve --ray` on the shared cluster, with a key in its environment."""
    ray_cluster_session.revive()
    work = tmp_path_factory.mktemp("ray-judge")
    port = free_port()
    log = work / "serve.log"
    argv = [
        str(Path(sys.executable).parent / "atoll"),
        "judge",
        "serve",
        "--ray",
        ray_cluster_session.address,
        "--problems",
        str(problems),
        "--state-dir",
        str(work / "state"),
        "--port",
        str(port),
        "--socket-dir",
        str(work / "socket"),
    ]
    env = {**ray_cluster_session.env, "OPENAI_API_KEY": SECRET}
    with log.open("wb") as out:
        server = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: server.poll() is not None or _answers(url), 180, "the judge answers")
        assert server.poll() is None, log.read_text()
        yield url
    finally:
        server.terminate()
        server.wait(60)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _submit(url: str, source: bytes) -> int:
    answer = httpx.post(f"{url}/submit", json={"pid": "0", "code": source.decode()}, timeout=30)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["sid"])


def _final(url: str, sid: int, seconds: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        body: dict[str, Any] = httpx.get(f"{url}/result/{sid}", timeout=30).json()
        if body.get("status") not in ("queued", "running", None):
            return body
        time.sleep(0.2)
    raise AssertionError(f"submission {sid} not final within {seconds} s")


def _verdict(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what differs between two judgings of one program."""
    kept = {k: v for k, v in result.items() if k != "judge"}
    if "cases" in kept:
        kept["cases"] = [{k: v for k, v in c.items() if k not in RUN_FIELDS} for c in kept["cases"]]
    return kept


def _node_counts(cluster: LocalRayCluster, result: dict[str, Any]) -> dict[int, int]:
    return {cluster.worker_of(node): n for node, n in result["judge"]["nodes"].items()}


def test_the_job_plugins_judge_judges_on_the_cluster(
    ray_cluster: LocalRayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `--pk ray=ADDRESS` gives a job: the embedded judge (atoll's problems), its cases
    on the judge nodes; and the job's process keeps its own handling of SIGTERM.

    First in the module: a judge holds its nodes' judge units while it runs, so this one
    runs before `atoll judge serve --ray` (the module's `ray_judge`) holds them.
    """
    for name, value in ray_cluster.driver_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(JUDGE_URL_ENV, raising=False)
    monkeypatch.delenv(SOCKET_DIR_ENV, raising=False)
    source = (PROGRAMS / "row.cpp").read_bytes()
    sigterm = signal.getsignal(signal.SIGTERM)
    with JudgeForTrials(tmp_path / "job", ray=ray_cluster.address) as judge:
        # Joining the cluster left no handler of Ray's: SIGTERM is handled as before.
        assert signal.getsignal(signal.SIGTERM) == sigterm
        assert judge.url is not None
        assert httpx.get(f"{judge.url}/health").json() == {"ok": True, "workers": 2}
        result = _final(judge.url, _submit(judge.url, source))
    local = Engine(load_problems(), tmp_path / "local")
    try:
        assert _verdict(result) == _verdict(local.judge("0", source))
    finally:
        local.close()
    assert set(_node_counts(ray_cluster, result)) == {0, 1}


def test_cases_land_on_both_nodes_and_verdicts_equal_a_local_run(
    ray_cluster: LocalRayCluster, ray_judge: str, local_engine: Engine
) -> None:
    assert httpx.get(f"{ray_judge}/health").json() == {"ok": True, "workers": 2}
    for name in ("row", "crash_ratio", "broken"):
        source = (PROGRAMS / f"{name}.cpp").read_bytes()
        result = _final(ray_judge, _submit(ray_judge, source))
        assert _verdict(result) == _verdict(local_engine.judge("0", source)), name
        if result["status"] == "done":
            counts = _node_counts(ray_cluster, result)
            assert set(counts) == {0, 1} and sum(counts.values()) == len(CASES), counts
    assert result["status"] == "error" and "compile error" in result["error"]
    leaked = subprocess.run(
        ["grep", "-rl", SECRET, str(ray_cluster.root)], capture_output=True, text=True
    )
    assert leaked.returncode == 1 and leaked.stdout == "", f"the key is in {leaked.stdout}"


def test_a_node_killed_mid_submission_changes_no_verdict(
    ray_cluster: LocalRayCluster, ray_judge: str, local_engine: Engine
) -> None:
    source = SLOW + (PROGRAMS / "row.cpp").read_bytes()
    expected = _verdict(local_engine.judge("0", source))
    sid = _submit(ray_judge, source)
    _wait_running_on(ray_cluster, 1)
    ray_cluster.kill_node(1)
    result = _final(ray_judge, sid)
    assert _verdict(result) == expected
    counts = _node_counts(ray_cluster, result)
    assert sum(counts.values()) == len(CASES) and counts[0] >= len(CASES) // 2, counts
    assert [case["case"] for case in result["cases"]] == list(range(1, len(CASES) + 1))


def test_no_node_left_is_an_infrastructure_error(
    ray_cluster: LocalRayCluster, ray_judge: str
) -> None:
    # Cases of 2.5 s (the wall limit is 4 s): the submission outlasts finding one case running
    # on a loaded machine.
    slower = SLOW.replace(b"usleep(700000)", b"usleep(2500000)")
    source = slower + (PROGRAMS / "row.cpp").read_bytes() + b"\n// no node left\n"
    sid = _submit(ray_judge, source)
    _wait_running_on(ray_cluster, 0)
    ray_cluster.kill_nodes(0, 1)
    result = _final(ray_judge, sid)
    assert result["status"] == "infrastructure_error", result
    assert "no judge node" in result["error"] and "score" not in result


def _wait_running_on(cluster: LocalRayCluster, index: int) -> None:
    """Until worker `index` runs a case: a sandboxed program (which sleeps first) descends
    from one of its node's processes."""
    node = set(group_members(cluster.workers[index].pgid))

    def running() -> bool:
        return any(_ancestors(pid) & node for pid in pids_mentioning("/judge/solution"))

    wait_for(running, 120, f"a case running on worker {index}")


def _ancestors(pid: int) -> set[int]:
    found = set()
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        found.add(pid)
    return found
