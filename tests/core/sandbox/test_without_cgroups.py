"""The bubblewrap backend where no cgroup is writable: rlimits alone must contain.

Runs in a child interpreter with ATOLL_SANDBOX_CGROUPS=off, the switch that
makes the backend behave as on a machine without a writable cgroup tree: runs
in fresh boxes, and runs of a session (whose launcher sets the same rlimits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

CHILD = """
import json, sys
from atoll.core.sandbox import Limits, SandboxSpec, get_backend
uid = int(sys.argv[1])
backend = get_backend("bwrap")
session = backend.session(SandboxSpec(uid=uid, gid=uid)) if sys.argv[2] == "session" else None
def run(argv, **limits):
    spec = SandboxSpec(uid=uid, gid=uid, limits=Limits(**{"wall_seconds": 10, **limits}))
    if session is not None:
        return session.run(argv, spec.limits).status.value
    return backend.run(argv, spec).status.value
print(json.dumps({
    "memory": run(["python3", "-c", "b = bytearray(400 * 2**20)"], memory_bytes=128 * 2**20),
    "cpu": run(["python3", "-c", "while True: pass"], cpu_seconds=1),
    "fork": run(["sh", "-c", "for i in $(seq 50); do sleep 5 & done; wait"], processes=10),
    "wall": run(["sleep", "30"], wall_seconds=1),
    "ok": run(["true"]),
}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("way", ["fresh", "session"])
def test_rlimits_contain_without_cgroups(test_uid, way):
    env = {**os.environ, "ATOLL_SANDBOX_CGROUPS": "off"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(test_uid + 1), way],
        capture_output=True,
        text=True,
        env=env,
        timeout=100,
        check=True,
    )
    statuses = json.loads(done.stdout)
    assert statuses == {
        "memory": "memory_limit",
        "cpu": "cpu_time_limit",
        "fork": "runtime_error",
        "wall": "wall_time_limit",
        "ok": "ok",
    }
