"""The grader inside real trials (atoll-local and Docker), against a hostile submission.

The task is the toy task as a bundle whose "reference" is hostile: a fork bomb with a daemon
in its own session, reads of /tests and /solution and a write to /logs/verifier, and a memory
bomb. Its test.sh also lists every process left in the box once the grader is done.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from support.engine import docker_engine
from support.trials import atoll_run, verifier_json

from atoll.checker import Contract
from atoll.frontiersmith.bundle import OFFLINE_BASE_IMAGE, BundleSpec, write_bundle

TOY = Path(__file__).parent / "tasks" / "toy"

HOSTILE = """import json, os, sys, time
instance = json.load(sys.stdin)
case = instance["case"]
if case == 0:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(600)
        os._exit(0)
    while True:
        try:
            os.fork()
        except OSError:
            pass
if case == 1:
    denied = 0
    for path in ("/tests/scorer.py", "/solution/solution.py"):
        try:
            open(path).read()
        except OSError:
            denied += 1
    try:
        open("/logs/verifier/reward.txt", "w").write("1.0")
    except OSError:
        denied += 1
    print(json.dumps({"x": 0.5 if denied == 3 else 1.0}))
if case == 2:
    hoard = [bytearray(64 << 20) for _ in range(64)]
"""

RECORDING_TEST_SH = """#!/bin/sh
set -u
python3 -I /tests/grader.py grade --tests /tests --submission /workspace/solution.py \\
    --out /logs/verifier --lock /solution --lock /logs/verifier
status=$?
for p in /proc/[0-9]*; do
    echo "$(stat -c %u "$p" 2>/dev/null) $(tr '\\0' ' ' < "$p/cmdline" 2>/dev/null)"
done > /logs/verifier/processes.txt
exit $status
"""


@pytest.fixture
def hostile_task(tmp_path: Path) -> Path:
    tests = TOY / "tests"
    spec = BundleSpec(
        name="hostile",
        title="Pick a number",
        summary="The toy task, with a hostile program in place of a reference.",
        statement='Print `{"x": v}` with `v` in [0, 1].',
        solution=HOSTILE,
        generator=(tests / "generator.py").read_text(),
        scorer=(tests / "scorer.py").read_text(),
        feasibility=(tests / "feasibility.py").read_text(),
        contract=Contract.from_json(json.loads((tests / "contract.json").read_text())),
        mutation="objective",
        base_image=OFFLINE_BASE_IMAGE,
    )
    task = Path(write_bundle(tmp_path / "hostile", dataclasses.replace(spec)).path)
    (task / "tests" / "test.sh").write_text(RECORDING_TEST_SH)
    return task


def _check(trial: Path) -> None:
    scores = verifier_json(trial, "scores.json")
    assert [c["status"] for c in scores["cases"]] == ["timeout", "ok", "memory"], scores["cases"]
    assert verifier_json(trial, "reward.json") == {"reward": 0.5 / 3}
    uid = scores["isolation"]["uid"]
    left = (trial / "verifier" / "processes.txt").read_text().splitlines()
    assert left and not [line for line in left if line.split(" ", 1)[0] == str(uid)]


@pytest.mark.slow
def test_hostile_submission_in_an_atoll_local_trial(hostile_task, tmp_path):
    _check(atoll_run(tmp_path / "jobs", agent="oracle", env="atoll-local", path=hostile_task))


@pytest.mark.slow
@pytest.mark.docker
def test_hostile_submission_in_a_docker_trial(hostile_task, tmp_path):
    host = docker_engine()
    _check(
        atoll_run(
            tmp_path / "jobs", agent="oracle", env="docker", path=hostile_task, docker_host=host
        )
    )
