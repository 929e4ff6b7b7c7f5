"""One Harbor trial on atoll-local whose verifier runs under `allowed_hosts = ["127.0.0.1"]`."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ci

from atoll.core.environments import egress_rules

# The only tests that make atoll-local allowlist tables, which this one counts host-wide.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.xdist_group("nftables")]


@pytest.fixture(autouse=True)
def allowlist_tables_turn() -> Iterator[None]:
    """Alone: it counts every atoll-local table on the host, so no other allowlist test runs."""
    from support.engine_lock import engine_held

    with engine_held("nftables allowlist tables", exclusive=True):
        yield


TASK = Path(__file__).parent / "tasks" / "allowlist-verifier"


def _pending(server: socket.socket) -> int:
    """How many connections wait in the listener's queue (each one a client that got through)."""
    server.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def test_verifier_reaches_only_the_allowed_listener(venv_bin, tmp_path):
    ci.need(egress_rules.supported(), "allowlists need root and a working nft here")
    allowed = socket.create_server(("127.0.0.1", 0), backlog=16)
    other = socket.create_server(("127.0.0.2", 0), backlog=16)
    task = tmp_path / "allowlist-verifier"
    shutil.copytree(TASK, task)
    ports = f"ALLOWED_PORT={allowed.getsockname()[1]}\nOTHER_PORT={other.getsockname()[1]}\n"
    for part in ("solution", "tests"):
        (task / part / "ports.env").write_text(ports)
    jobs = tmp_path / "jobs"
    roots = tmp_path / "roots"
    jobs.mkdir()
    roots.mkdir()
    try:
        done = subprocess.run(
            [str(venv_bin / "atoll"), "run", "-p", str(task), "--agent", "oracle"]
            + ["--env", "atoll-local", "-o", str(jobs)],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=jobs,
            env={
                "PATH": f"{venv_bin}:/usr/bin:/bin:/usr/sbin:/sbin",
                "HOME": str(jobs),
                "TERM": "dumb",
                "ATOLL_LOCAL_ROOT": str(roots),
            },
        )
        # The agent (public) reached 127.0.0.2 once; the verifier reached 127.0.0.1 once.
        reached = {"127.0.0.1": _pending(allowed), "127.0.0.2": _pending(other)}
    finally:
        allowed.close()
        other.close()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (result_path,) = jobs.glob("*/result.json")
    (evals,) = json.loads(result_path.read_text())["stats"]["evals"].values()
    (trial,) = jobs.glob("*/*/verifier/test-stdout.txt")
    assert evals["n_errors"] == 0
    assert list(evals["reward_stats"]["reward"]) == ["1.0"], trial.read_text()
    assert reached == {"127.0.0.1": 1, "127.0.0.2": 1}
    tables = subprocess.run(
        [egress_rules.nft_command(), "list", "tables"], capture_output=True, text=True, check=True
    )
    assert "atoll_local_" not in tables.stdout
