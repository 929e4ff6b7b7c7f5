"""A real Harbor trial whose verifier phase has `network_mode = "no-network"`.

Harbor's docker environment starts our offline egress sidecar (found under
the name Harbor computes), routes the task's `main` container through it and
switches it to deny-all for the verifier. Both phases try the same listener on
this host: the agent phase must reach it and the verifier phase must not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from egress_listener import Listener
from harbor_cli import harbor_run_docker, only_eval

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(300)]

TASK = Path(__file__).parent / "tasks" / "egress-phases"


def test_verifier_phase_has_no_network_while_the_agent_phase_does(docker_host, tmp_path):
    listener = Listener()
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    try:
        done = harbor_run_docker(
            TASK, jobs, docker_host, "--yes", ATOLL_PROBE_PORT=str(listener.port)
        )
    finally:
        listener.close()
    log = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, log
    (trial,) = [path for path in jobs.glob("*/*") if (path / "verifier").is_dir()]
    agent = (trial / "agent" / "probe.txt").read_text().split()
    verifier = (trial / "verifier" / "probe.txt").read_text().split()
    assert agent[0] == "reached", agent
    assert verifier[:2] == ["blocked", "ConnectionRefusedError"], verifier
    assert float(verifier[2]) < 1.0, verifier  # refused at once, not timed out
    assert listener.tokens == ["agent"]
    evals = only_eval(jobs)
    assert evals["n_errors"] == 0, log
    assert list(evals["reward_stats"]["reward"]) == ["1.0"]
