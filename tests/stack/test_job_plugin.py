"""The `reef-stack` Harbor job plugin in a real `harbor run`, with the real `reef serve`."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from stack_support import atoll, marked_processes
from support.ports import free_port

from atoll.stack import health

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HERE = Path(__file__).parent
TASK = HERE / "tasks" / "reef-receipt"
LOCAL_ENV = "atoll.core.environments.local:LocalEnvironment"


def _harbor_argv(venv_bin: Path, tmp_path: Path, *pk: str) -> tuple[list[str], Path]:
    jobs = tmp_path / "jobs"
    config = tmp_path / "run.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\ntraining = "off"\n')
    return [str(venv_bin / "harbor"), "run", "-p", str(TASK), "--agent", "reef_probe_agent:ReefProbeAgent",
            "--env", LOCAL_ENV, "-o", str(jobs), "--plugin", "reef-stack", "--pk", f"config={config}",
            *pk], jobs  # fmt: skip


def _harbor_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    for name in ("jobs", "roots", "home"):
        (tmp_path / name).mkdir(exist_ok=True)
    return {**env, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(HERE),
            "ATOLL_LOCAL_ROOT": str(tmp_path / "roots"), "HARBOR_TELEMETRY": "0"}  # fmt: skip


def _harbor(
    venv_bin: Path, env: dict[str, str], tmp_path: Path, *pk: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    argv, jobs = _harbor_argv(venv_bin, tmp_path, *pk)
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=240, cwd=jobs, env=_harbor_env(env, tmp_path)
    )
    return done, jobs


def _harbor_run(venv_bin: Path, env: dict[str, str], tmp_path: Path, *pk: str) -> Path:
    done, jobs = _harbor(venv_bin, env, tmp_path, *pk)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (job_dir,) = [p.parent for p in jobs.glob("*/result.json")]
    return job_dir


def _reward_and_receipt(job_dir: Path) -> tuple[list[str], dict]:
    result = json.loads((job_dir / "result.json").read_text())
    (evals,) = result["stats"]["evals"].values()
    assert evals["n_errors"] == 0
    (receipt,) = job_dir.glob("*/agent/receipt.json")
    return list(evals["reward_stats"]["reward"]), json.loads(receipt.read_text())


def test_plugin_starts_reef_for_the_job_and_stops_it_at_the_end(
    venv_bin, tmp_path, upstream, stack_env, mark
):
    port = free_port()
    env = {k: v for k, v in stack_env.items() if k != "REEF_TOKEN"}  # the plugin makes one
    job_dir = _harbor_run(
        venv_bin, env, tmp_path, "--pk", f"upstream_url={upstream.base_url}", "--pk", f"port={port}"
    )
    rewards, receipt = _reward_and_receipt(job_dir)
    assert rewards == ["1.0"]
    assert len(receipt["receipt"]) == 32
    assert receipt["answer"] == "<guidance>try a greedy fill</guidance>"
    assert receipt["reef_url"] == f"http://127.0.0.1:{port}"
    # Where the training gate finds the Ray cluster named in Reef's runtime files.
    assert receipt["reef_run_dir"] == str(job_dir.resolve() / "reef-stack" / "reef-run")
    assert len(upstream.chat_requests()) == 1
    # Logs under the job directory, Reef's records under the run's state directory.
    assert (job_dir / "reef-stack" / "logs" / "reef-serve.log").stat().st_size > 0
    assert (tmp_path / "state" / "reef" / "agent-record").is_dir()
    # Stopped at job end: no state, no process, nothing on the port.
    assert not (job_dir / "reef-stack" / "stack.json").exists()
    assert not list((job_dir / "reef-stack" / "reef-run").glob("*/runtime.yaml"))  # held the token
    assert marked_processes(mark) == []
    assert not health.healthy(f"http://127.0.0.1:{port}")


def test_plugin_uses_a_running_reef_and_leaves_it_running(
    venv_bin, tmp_path, upstream, stack_env, mark
):
    port = free_port()
    outside = tmp_path / "outside"
    up = atoll(
        ["stack", "up", "--training", "off", "--upstream-url", upstream.root_url, "--port", str(port),
         "--stack-dir", str(outside), f"state_dir={tmp_path / 'outside-state'}"],
        stack_env,
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    try:
        job_dir = _harbor_run(
            venv_bin,
            stack_env,
            tmp_path,
            "--pk",
            f"upstream_url={upstream.base_url}",
            "--pk",
            f"port={port}",
        )
        rewards, receipt = _reward_and_receipt(job_dir)
        assert rewards == ["1.0"]
        assert receipt["reef_url"] == f"http://127.0.0.1:{port}"
        assert not (job_dir / "reef-stack" / "logs").exists()  # nothing was started
        assert health.is_reef(f"http://127.0.0.1:{port}")
    finally:
        down = atoll(["stack", "down", "--stack-dir", str(outside)], stack_env)
    assert "stopped reef-serve" in down.stderr
    assert marked_processes(mark) == []


def test_harbor_lists_the_plugin(venv_bin):
    listed = subprocess.run(
        [str(venv_bin / "harbor"), "plugins", "list"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0
    assert "reef-stack" in listed.stdout
    assert "atoll.stack.job_plugin:ReefStackPlugin" in listed.stdout


@pytest.mark.parametrize(
    ("pk", "message"),
    [
        (("--pk", "trainng=on"), "reef-stack: error: reef-stack option trainng: Extra inputs"),
        (
            ("--pk", "training=on", "--pk", "reef_home=/nonexistent"),
            "reef-stack: error: REEF_HOME=/nonexistent",
        ),
    ],
    ids=["unknown-option", "bad-reef-home"],
)
def test_plugin_errors_are_one_line_and_start_nothing(
    venv_bin, tmp_path, stack_env, mark, pk, message
):
    done, _ = _harbor(venv_bin, stack_env, tmp_path, "--pk", f"port={free_port()}", *pk)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    (line,) = [line for line in output.splitlines() if "reef-stack: error:" in line]
    assert line.startswith(message)
    assert marked_processes(mark) == []


def test_atoll_registry_lists_the_job_plugin_and_the_command(venv_bin):
    listed = subprocess.run(
        [str(venv_bin / "atoll"), "plugins", "list"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    rows = {
        (r["name"], r["kind"]): r
        for r in json.loads(
            subprocess.run(
                [str(venv_bin / "atoll"), "plugins", "list", "--json"],
                capture_output=True, text=True, timeout=60, check=True,
            ).stdout
        )
    }  # fmt: skip
    assert rows[("reef-stack", "job plugin")]["target"] == "atoll.stack.job_plugin:ReefStackPlugin"
    assert rows[("stack", "command")]["target"] == "atoll.stack.cli:app"
    assert "atoll-reef-stack" in listed.stdout and "reef-stack" in listed.stdout


def test_interrupting_the_job_stops_the_stack(venv_bin, tmp_path, upstream, stack_env, mark):
    port = free_port()
    argv, jobs = _harbor_argv(
        venv_bin, tmp_path, "--pk", f"upstream_url={upstream.base_url}", "--pk", f"port={port}",
        "--ak", "linger_s=120",
    )  # fmt: skip
    harbor = subprocess.Popen(
        argv, cwd=tmp_path, env=_harbor_env(stack_env, tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not list(jobs.glob("*/*/agent/receipt.json")) and time.monotonic() < deadline:
            assert harbor.poll() is None, harbor.stdout.read() if harbor.stdout else ""
            time.sleep(0.1)
        assert health.is_reef(f"http://127.0.0.1:{port}")  # the agent is mid-run, Reef is up
        harbor.send_signal(signal.SIGINT)  # Ctrl-C: Harbor never reaches on_job_end
        output, _ = harbor.communicate(timeout=120)
    finally:
        if harbor.poll() is None:
            harbor.kill()
    assert "reef-stack: stopped reef-serve" in output
    assert _settles(mark)
    assert not health.healthy(f"http://127.0.0.1:{port}")


def _settles(mark: str) -> bool:
    deadline = time.monotonic() + 10
    while marked_processes(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    return marked_processes(mark) == []
