"""Pi's bash operation on a real atoll-local environment: no output lost, no hang.

atoll-local stops whatever is left in a trial's box once an exec's main
process has exited, so a command's output must be out of its `tail` before the
bridge's script ends. Background processes that keep the command's output
open are waited for, as Pi's own bash tool waits for them, until the
command's deadline.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.local_env import local_environment

from atoll.pi.target import ToolTarget, new_token

TASK = Path(__file__).parents[1] / "core" / "environments" / "tasks" / "write-a-file"

pytestmark = pytest.mark.timeout(120)


def on_atoll_local(tmp_path: Path, scenario):
    """Start an atoll-local environment, run `scenario(tools)`, always stop it."""

    async def main():
        env = local_environment(tmp_path / "trial", TASK / "environment", "write-a-file")
        await env.start(force_build=False)
        try:
            tools = ToolTarget(env, command_timeout_s=60, output_bytes=4096, max_read=1 << 20)
            return await scenario(tools)
        finally:
            await env.stop(delete=True)

    return asyncio.run(main())


@pytest.mark.slow
def test_output_of_the_command_and_of_what_it_left_running_is_kept(tmp_path):
    async def scenario(tools):
        quick = [
            await tools.run("echo out; echo err >&2", "/app", None, new_token()) for _ in range(10)
        ]
        began = time.monotonic()
        late = await tools.run("(sleep 1; echo late) & echo early", "/app", None, new_token())
        return quick, late, time.monotonic() - began

    quick, late, took = on_atoll_local(tmp_path, scenario)
    assert [(o.stdout, o.stderr, o.exit_code) for o in quick] == [("out\n", "err\n", 0)] * 10
    assert (late.stdout, late.exit_code, late.timed_out) == ("early\nlate\n", 0, False)
    assert took >= 1.0


def test_a_detached_background_process_does_not_hold_the_command(tmp_path):
    async def scenario(tools):
        began = time.monotonic()
        outcome = await tools.run(
            "sleep 30 >/dev/null 2>&1 & echo started", "/app", None, new_token()
        )
        return outcome, time.monotonic() - began

    outcome, took = on_atoll_local(tmp_path, scenario)
    assert (outcome.stdout, outcome.exit_code, outcome.timed_out) == ("started\n", 0, False)
    assert took < 10


@pytest.mark.slow
def test_a_background_process_holding_the_output_is_stopped_at_the_deadline(tmp_path):
    async def scenario(tools):
        began = time.monotonic()
        outcome = await tools.run("sleep 60 & echo kept", "/app", 2, new_token())
        return outcome, time.monotonic() - began

    outcome, took = on_atoll_local(tmp_path, scenario)
    assert (outcome.stdout, outcome.exit_code, outcome.timed_out) == ("kept\n", 124, True)
    assert took < 20
