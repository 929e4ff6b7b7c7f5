"""The GPU smoke's step runs its sampling half on any machine, through a search-only stack.

`scripts/gpu_smoke.sh` trains one step on a GPU machine; what it does before
the trainer matters (the whole G × R grid sampled through Reef with the
agent's own client, each rollout reported against its receipt) is checked
here with a record-only Reef, which never trains: the step then reports the
deadline, as it would on a GPU machine whose trainer did not advance.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from stack_support import atoll, marked_processes
from support.ports import free_port

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
def test_the_smoke_step_samples_and_reports_the_whole_grid_through_reef(
    tmp_path, upstream, stack_env, mark
):
    port = free_port()
    stack_dir = tmp_path / "stack"
    run_toml = tmp_path / "smoke.toml"
    run_toml.write_text(
        f'groups = 2\nrollouts = 2\nguidance_model = "guide"\ntraining = "off"\n'
        f'state_dir = "{tmp_path / "state"}"\nreef_url = "http://127.0.0.1:{port}"\n'
        f'guidance_base_url = "{upstream.base_url}"\n'
    )
    up = atoll(["stack", "up", "--config", str(run_toml), "--stack-dir", str(stack_dir)], stack_env)
    assert up.returncode == 0, up.stderr
    try:
        done = subprocess.run(
            [sys.executable, "-m", "atoll.guidance_ttt.gpu_smoke", "--config", str(run_toml),
             "--deadline", "1"],
            env={**stack_env, "REEF_URL": up.stdout.strip()},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        atoll(["stack", "down", "--stack-dir", str(stack_dir)], stack_env)
    assert "Traceback" not in done.stderr, done.stderr
    sampled = [line for line in done.stdout.splitlines() if line.startswith("step 0 group ")]
    assert len(sampled) == 4 and all(": receipt " in line for line in sampled), done.stdout
    assert "sampled and reported 4 rollouts" in done.stdout
    assert len(upstream.chat_requests()) == 4
    # A record-only Reef never trains: the step ends at its deadline, as a failure.
    assert done.returncode == 1
    assert "Reef did not train step 0 within 1 s" in done.stderr
    assert marked_processes(mark) == []
