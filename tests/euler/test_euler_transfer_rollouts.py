"""The frozen transfer evaluation with real rollouts: two runs, their manifests, a comparison.

Run A solves all four tasks; run B (another model name) gets two of them
wrong and fixed an acceptance rule before sampling. `compare A B` gives
per-task counts and Fisher tests and, B's rule being fixed in advance, a
decision. (Refusing mismatched manifests is tested without rollouts.) The
same suite on the tests' Ray cluster gives a single machine's rows.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_solver import Steps, bash, solver, write
from support.euler_cli import ATOLL, KEY_ENV, RAY_NODE_KEY, comparable, driver_env, read_rows
from support.openai_server import ScriptedOpenAIServer

from atoll.euler.transfer import suite

pytestmark = [pytest.mark.docker, pytest.mark.slow]

HONEST = {
    "Filtered log latency": (
        "total = 0\n"
        "for line in open('service.log'):\n"
        "    if not line.strip() or line.startswith('#'):\n"
        "        continue\n"
        "    _, level, *fields = line.split()\n"
        "    v = dict(f.split('=', 1) for f in fields)\n"
        "    if level == 'ERROR' and v['service'] == 'billing' and 500 <= int(v['status']) <= 599:\n"
        "        total += int(v['latency_ms'])\n"
        "print(total)\n"
    ),
    "Signed inventory balances": (
        "import csv\n"
        "stock = {r['sku']: int(r['stock']) for r in csv.DictReader(open('opening.csv'))}\n"
        "for r in csv.DictReader(open('movements.csv')):\n"
        "    if r['note'].strip() != 'VOID':\n"
        "        stock[r['sku']] = stock.get(r['sku'], 0) + int(r['quantity'])\n"
        "print(sum(v for v in stock.values() if v < 0))\n"
    ),
    "Weighted line checksum": (
        "lines = open('records.txt').read().split('\\n')\n"
        "lines = lines[:-1] if lines and lines[-1] == '' else lines\n"
        "print(sum(i * sum(l.encode()) for i, l in enumerate(lines, 1)) % 1000000007)\n"
    ),
    "Totals across shards": (
        "import json\n"
        "t = {}\n"
        "for k in range(4):\n"
        "    for line in open(f'shard-{k}.jsonl'):\n"
        "        r = json.loads(line)\n"
        "        if r['ok'] is True:\n"
        "            t[r['user']] = t.get(r['user'], 0) + r['bytes']\n"
        "print(max(t.values()))\n"
    ),
}
# The weaker model forgets the VOID rule and the `ok` flag.
WEAK = {
    **HONEST,
    "Signed inventory balances": HONEST["Signed inventory balances"].replace(
        "!= 'VOID'", "!= 'never'"
    ),
    "Totals across shards": HONEST["Totals across shards"].replace(
        "if r['ok'] is True:", "if True:"
    ),
}


def scenarios(key: str, language: str, model: str) -> Steps:
    programs = WEAK if model == "weaker-model" else HONEST
    return [write("solution.py", programs[key.removeprefix("t:")]), bash("python3 solution.py")]


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(solver(scenarios)) as server:
        yield server


def transfer(
    out: Path, provider: ScriptedOpenAIServer, model: str, env: dict[str, str], *more: str
) -> subprocess.CompletedProcess[str]:
    command = [
        ATOLL,
        "euler",
        "transfer",
        "run",
        "--out",
        str(out),
        "--base-url",
        provider.base_url,
        "--model",
        model,
        "--api-key-env",
        KEY_ENV,
        "--languages",
        "python",
        "--samples",
        "1",
        "--workers",
        "2",
        "--max-turns",
        "8",
        "--timeout",
        "120",
        *more,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_transfer_runs_manifests_and_compare(
    rollout_ready: dict[str, Any],
    provider: ScriptedOpenAIServer,
    key_env: dict[str, str],
    tmp_path: Path,
) -> None:
    a = transfer(tmp_path / "a", provider, "scripted-model", key_env)
    assert a.returncode == 0, a.stderr[-3000:]
    b = transfer(
        tmp_path / "b", provider, "weaker-model", key_env, "--accept", "min_delta=0.1,alpha=0.05"
    )
    assert b.returncode == 0, b.stderr[-3000:]
    manifest_a = json.loads((tmp_path / "a" / "manifest.json").read_text())
    manifest_b = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert (
        manifest_a["status"] == "completed"
        and manifest_a["rows"] == manifest_a["expected_rows"] == 4
    )
    assert manifest_a["suite"] == {"name": suite.SUITE_NAME, "digest": suite.SUITE_DIGEST}
    assert manifest_a["selection"] == list(suite.TASK_IDS)
    assert manifest_a["fanout"] == {"languages": ["python"], "approaches": ["direct"], "samples": 1}
    rows_a = [json.loads(line) for line in (tmp_path / "a" / "rows.jsonl").read_text().splitlines()]
    assert {r["container"]["image_id"] for r in rows_a} == {manifest_a["sandbox_image"]["image_id"]}
    assert all(r["passed"] for r in rows_a)
    assert manifest_a["acceptance"] is None and manifest_b["acceptance"]["rule"]["min_delta"] == 0.1
    assert manifest_b["model"]["signature"] != manifest_a["model"]["signature"]

    compared = subprocess.run(
        [ATOLL, "euler", "transfer", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert compared.returncode == 0, compared.stderr
    result = json.loads(compared.stdout)
    by_task = {line["task"]: (line["a"]["passes"], line["b"]["passes"]) for line in result["tasks"]}
    assert by_task == {
        "filtered-logs": (1, 1),
        "signed-inventory": (1, 0),
        "weighted-checksum": (1, 1),
        "shard-totals": (1, 0),
    }
    assert result["overall"]["fisher"]["p_two_sided"] == pytest.approx(3 / 7)  # [[4, 0], [2, 2]]
    assert result["decision"]["verdict"] == "do not promote"

    reverse = subprocess.run(
        [ATOLL, "euler", "transfer", "compare", str(tmp_path / "b"), str(tmp_path / "a")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reverse.returncode == 0 and "no promotion decision" in reverse.stdout
    assert "promote" not in reverse.stdout.replace("promotion", "")


def test_a_transfer_run_on_the_cluster_gives_a_single_machines_rows(
    ray_cluster: Any,
    rollout_ready: dict[str, Any],
    provider: ScriptedOpenAIServer,
    key_env: dict[str, str],
    tmp_path: Path,
) -> None:
    """`transfer run --ray`: each task's files reach the rollout on the node that runs it, and
    the rows and the manifest are those of a run on this machine."""
    here, there = tmp_path / "local", tmp_path / "ray"
    local = transfer(here, provider, "scripted-model", key_env)
    assert local.returncode == 0, local.stderr[-3000:]
    remote = transfer(
        there, provider, "scripted-model", driver_env(ray_cluster), "--ray", ray_cluster.address
    )
    assert remote.returncode == 0, remote.stderr[-3000:]
    local_rows = {r["problem"]: r for r in read_rows(here)}
    ray_rows = {r["problem"]: r for r in read_rows(there)}
    assert len(ray_rows) == len(read_rows(there)) == 4 and sorted(ray_rows) == sorted(local_rows)
    assert all(row["passed"] for row in ray_rows.values())
    for task, row in ray_rows.items():
        assert comparable(row) == comparable(local_rows[task])
    workers = {node.node_id for node in ray_cluster.workers}
    assert {row["ray_node"] for row in ray_rows.values()} == workers
    manifest = json.loads((there / "manifest.json").read_text())
    alone = json.loads((here / "manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["rows"] == manifest["expected_rows"] == 4
    for part in ("suite", "selection", "fanout", "sandbox_image"):
        assert manifest[part] == alone[part], part
    assert RAY_NODE_KEY not in remote.stdout + remote.stderr
