"""`atoll euler eval --ray`: real Pi rollouts as Ray tasks on the tests' local cluster.

The cluster (a head and two worker nodes on loopback, one Docker slot each)
is the shared one of tests/conftest.py; its nodes hold the model's key in
their own environment and the driver does not. Three problems, one sample,
Python: two pass the gate and one fails it, so the comparison with a
single-machine run covers both verdicts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_solver import Steps, bash, solver, write
from support.euler_cli import (
    ATOLL,
    KEY_ENV,
    RAY_NODE_KEY,
    comparable,
    driver_env,
    read_rows,
)
from support.openai_server import ScriptedOpenAIServer
from support.processes import pids_where

pytestmark = [pytest.mark.docker, pytest.mark.slow]

P1 = "print(sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0))\n"
P5 = "import math\nprint(math.lcm(*range(1, 21)))\n"
P2_INLINE = (
    'python3 -c "f = [1, 2]; [f.append(f[-1] + f[-2]) for _ in range(40)]; '
    'print(sum(x for x in f if x % 2 == 0 and x <= 4000000))"'
)


def scenarios(key: str, language: str, model: str) -> Steps:
    return {
        "p1": [write("solution.py", P1), bash("python3 solution.py")],
        "p2": [write("solution.py", "print('working on it')\n"), bash(P2_INLINE)],
        "p5": [write("solution.py", P5), bash("python3 solution.py")],
    }[key]


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedOpenAIServer]:
    # each model turn takes a second, so a rollout is still running when a node is killed
    with ScriptedOpenAIServer(solver(scenarios, delay_s=1.0)) as server:
        yield server


def eval_cmd(store: Path, out: Path, provider: ScriptedOpenAIServer, problems: str) -> list[str]:
    return [
        *(ATOLL, "euler", "eval", "--store", str(store), "--problems", problems),
        *("--languages", "python", "--base-url", provider.base_url, "--model", "scripted-model"),
        *("--api-key-env", KEY_ENV, "--workers", "2", "--out", str(out)),
        *("--max-turns", "8", "--timeout", "120"),
    ]


def record_of(out: Path, row: dict[str, Any]) -> dict[str, Any]:
    return json.loads((out / row["rollout_dir"] / "record.json").read_text())


def logs_holding(root: Path, secret: str) -> list[str]:
    """Files under `root` (a node's --temp-dir, a run directory) whose bytes hold `secret`."""
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and secret.encode() in path.read_bytes():
                found.append(str(path))
        except OSError:
            continue
    return found


def test_rows_equal_a_single_machine_run_and_land_on_both_workers(
    ray_cluster: Any,
    rollout_ready: dict[str, Any],
    sample_store: Path,
    provider: ScriptedOpenAIServer,
    key_env: dict[str, str],
    tmp_path: Path,
) -> None:
    here, there = tmp_path / "local", tmp_path / "ray"
    local = subprocess.run(
        eval_cmd(sample_store, here, provider, "1,2,5"),
        capture_output=True,
        text=True,
        env=key_env,
        timeout=600,
    )
    assert local.returncode == 0, local.stderr[-3000:]
    remote = subprocess.run(
        [*eval_cmd(sample_store, there, provider, "1,2,5"), "--ray", ray_cluster.address],
        capture_output=True,
        text=True,
        env=driver_env(ray_cluster),
        timeout=600,
    )
    assert remote.returncode == 0, remote.stderr[-3000:]
    local_rows = {r["problem"]: r for r in read_rows(here)}
    ray_rows = {r["problem"]: r for r in read_rows(there)}
    assert sorted(ray_rows) == [1, 2, 5] and len(read_rows(there)) == 3
    assert [ray_rows[p]["passed"] for p in (1, 2, 5)] == [True, False, True]
    for problem, row in ray_rows.items():
        assert comparable(row) == comparable(local_rows[problem])
        assert "ray_node" not in local_rows[problem]
        record, alone = record_of(there, row), record_of(here, local_rows[problem])
        assert set(record) == set(alone)
        for part in ("audit", "files_in", "workspace_files", "workspace_copy", "commands"):
            assert _without_timings(record[part]) == _without_timings(alone[part]), part
        assert record["container"]["cleanup"]["verified_gone"]
        assert (there / row["rollout_dir"] / "workspace" / "solution.py").is_file()
    workers = {node.node_id for node in ray_cluster.workers}
    assert {row["ray_node"] for row in ray_rows.values()} == workers  # both workers ran rollouts
    assert logs_holding(ray_cluster.root, RAY_NODE_KEY) == []
    assert logs_holding(there, RAY_NODE_KEY) == []
    assert RAY_NODE_KEY not in remote.stdout + remote.stderr


def _without_timings(value: Any) -> Any:
    """The bridge's operations keep their wall-clock times and the provider's call ids (numbered
    by the scripted server across both runs): those differ, nothing else may."""
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    if isinstance(value, dict):
        return {
            k: _without_timings(v)
            for k, v in value.items()
            if not k.endswith(("_s", "_at", "_ms")) and k not in ("at", "call_id")
        }
    return value


def pi_processes_on(cluster: Any) -> dict[int, int]:
    """Pi processes that a worker node of `cluster` started: pid -> the worker's index.

    Pi runs in its own process group, started by a Ray worker that leads its own group too,
    started by the node's raylet: the first ancestor in a node's group names the node.
    """
    groups = {node.pgid: index for index, node in enumerate(cluster.workers) if node.alive()}
    found = {}
    for pid in pids_where(
        lambda p: b"ATOLL_PI_ROLLOUT=" in Path(f"/proc/{p}/environ").read_bytes()
    ):
        ancestor = pid
        for _ in range(4):
            try:
                ancestor = int(
                    Path(f"/proc/{ancestor}/stat").read_text().rsplit(")", 1)[1].split()[1]
                )
                group = os.getpgid(ancestor)
            except (OSError, ValueError):
                break
            if group in groups:
                found[pid] = groups[group]
                break
    return found


def test_a_worker_killed_mid_rollout_loses_no_row_and_duplicates_none(
    ray_cluster: Any,
    rollout_ready: dict[str, Any],
    sample_store: Path,
    provider: ScriptedOpenAIServer,
    tmp_path: Path,
) -> None:
    out = tmp_path / "ray"
    run = subprocess.Popen(
        [*eval_cmd(sample_store, out, provider, "1,5"), "--ray", ray_cluster.address],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_env(ray_cluster),
    )
    orphans: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while not (running := pi_processes_on(ray_cluster)):
            assert run.poll() is None and time.monotonic() < deadline, "no rollout started"
            time.sleep(0.1)
        pid, victim = next(iter(running.items()))
        orphans = [os.getpgid(p) for p, index in running.items() if index == victim]
        ray_cluster.kill_node(victim)
        stdout, stderr = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
        for group in orphans:  # Pi ran in its own group: a lost machine would have taken it too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
    assert run.returncode == 0, stderr[-3000:]
    lost_node = ray_cluster.workers[victim].node_id
    rows = read_rows(out)
    scored = [r for r in rows if r["status"] == "scored"]
    lost = [r for r in rows if r["status"] != "scored"]
    assert sorted(r["problem"] for r in scored) == [1, 5]  # each attempt scored once
    assert all(r["passed"] for r in scored)
    assert len(lost) == 1 and lost[0]["ray_node"] == lost_node
    assert lost[0]["error"].startswith("node lost mid-rollout (an infrastructure failure)")
    assert lost[0]["score"] == 0 and not lost[0]["passed"]
    retried = next(r for r in scored if r["problem"] == lost[0]["problem"])
    assert retried["ray_node"] != lost_node and retried["rollout_dir"].endswith(".try-2")
    marker = json.loads((out / lost[0]["rollout_dir"] / "lost.json").read_text())
    assert marker["node_id"] == lost_node
    assert "retrying elsewhere" in stderr  # exit 0 above: no attempt left an error as its last row


def test_a_node_without_the_key_stops_the_run_before_any_write(
    ray_cluster: Any, sample_store: Path, provider: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    command = eval_cmd(sample_store, tmp_path / "out", provider, "1")
    command[command.index(KEY_ENV)] = "ATOLL_EULER_KEY_NO_NODE_HAS"
    done = subprocess.run(
        [*command, "--ray", ray_cluster.address],
        capture_output=True,
        text=True,
        env={**driver_env(ray_cluster), "ATOLL_EULER_KEY_NO_NODE_HAS": "driver-only"},
        timeout=300,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: node ") and "ATOLL_EULER_KEY_NO_NODE_HAS" in line
    assert "is not set" in line  # the node's own environment decides, not the driver's
    assert not (tmp_path / "out").exists()


def test_a_curriculum_round_runs_on_both_workers(
    ray_cluster: Any,
    rollout_ready: dict[str, Any],
    sample_store: Path,
    provider: ScriptedOpenAIServer,
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    done = subprocess.run(
        [
            *(ATOLL, "euler", "curriculum", "--model", "scripted-model", "--rounds", "1"),
            *("--store", str(sample_store), "--state", str(state)),
            *("--base-url", provider.base_url, "--api-key-env", KEY_ENV, "--samples", "2"),
            *("--languages", "python", "--max-turns", "8", "--timeout", "120"),
            *("--ray", ray_cluster.address),
        ],
        capture_output=True,
        text=True,
        env=driver_env(ray_cluster),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_rows(state / "rounds" / "0001")
    assert sorted((r["phase"], r["problem"], r["sample"]) for r in rows) == [
        ("frontier", 1, 0),
        ("frontier", 1, 1),
    ]
    assert all(r["status"] == "scored" and r["passed"] for r in rows)
    assert {r["ray_node"] for r in rows} == {node.node_id for node in ray_cluster.workers}
