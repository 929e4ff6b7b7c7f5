"""A Guidance-TTT run with training=tinker on the session's local Tinker server, for tests.

The guidance policy is the tiny model, started from a training state that a
few supervised steps on well-formed guidance saved (`tinker_load_checkpoint`,
as a user starts from a warm start); the executor is the scripted packer
writer (`packers.PackerExecutor`). Reef runs in front of the run's policy
server, as the reef-stack job plugin would start it. Two supervised steps do
not teach the random tiny model the guidance format (its LoRA moves its
answers too little), so these runs' groups mostly earn equal rewards: they
test the plumbing of every step; `test_tinker_update_moves_policy` tests the
update itself.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from packers import guidance_text
from support.guidance_run import write_task
from support.ports import free_port
from support.reef_server import ReefServer

from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.prompting.prompts import guidance_prompt, guidance_request
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification

REPO = Path(__file__).resolve().parents[2]
POLYOMINO = REPO / "tasks" / "polyomino_packing"
WARM_SCRIPT = REPO / "tests" / "support" / "tinker_warm_start.py"
MAX_GUIDANCE_TOKENS = 48
WARM_FACTORS = ("0.5", "1.5", "3.0")


def polyomino_task(directory: Path) -> Task:
    """Polyomino packing (judge problem 0) with its seed, under a one-line statement.

    The task's full statement makes a 4,500-token prompt for the tiny model's
    tokenizer; every test step would pay for it in sampling and training on
    CPU, and the method's behaviour does not depend on the statement's length.
    """
    task = write_task(directory)
    solution = directory / "solution"
    solution.mkdir()
    for name in ("solution.cpp", "summary.txt"):
        (solution / name).write_bytes((POLYOMINO / "solution" / name).read_bytes())
    return task


def warm_prompts(task: Task) -> list[list[dict[str, str]]]:
    """Guidance prompts like the run's: the seed's, and children written by the packer executor."""
    summaries = [(POLYOMINO / "solution" / "summary.txt").read_text()] + [
        f"Shelf packer, tallest first, shelves {f} x sqrt(area) wide." for f in WARM_FACTORS
    ]
    prompts = []
    for summary in summaries:
        entry = Entry(
            program="", summary=summary, verification=Verification(Status.VALID, 60.0, 60.0, "ok")
        )
        prompts.append(guidance_request(guidance_prompt(task, entry), "tiny", 1)["messages"])
    return prompts


def warm_start(
    env: Mapping[str, str], base_model: Path, task: Task, name: str, steps: int = 2
) -> str:
    """A training state whose weights answer guidance prompts with well-formed guidance."""
    from atoll.pi_train import ensure_managed_env

    managed = ensure_managed_env(lambda line: None)
    examples = [
        {"messages": messages, "answer": guidance_text(factor)}
        for messages in warm_prompts(task)[:1]
        for factor in WARM_FACTORS
    ]
    job = {
        "base_url": env["TINKER_BASE_URL"],
        "base_model": str(base_model),
        "renderer": "qwen3",
        "lora_rank": 8,
        "learning_rate": 1e-2,
        "steps": steps,
        "name": name,
        "examples": examples,
    }
    done = subprocess.run(
        [str(managed.python), str(WARM_SCRIPT)],
        input=json.dumps(job),
        env={**env, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return str(json.loads(done.stdout.strip().splitlines()[-1])["state_path"])


@contextmanager
def reef_in_front_of_policy(run_dir: Path) -> Iterator[tuple[ReefServer, int]]:
    """The real Reef in upstream mode, proxying to the port the run's policy server will take."""
    port = free_port()
    reef = ReefServer(SimpleNamespace(root_url=f"http://127.0.0.1:{port}"), run_dir).start()  # type: ignore[arg-type]
    try:
        yield reef, port
    finally:
        reef.stop()


def tinker_settings(
    state_dir: Path, base_model: Path, warm_state: str, port: int, executor_url: str, **extra: Any
) -> dict[str, Any]:
    return {
        "training": "tinker",
        "groups": 2,
        "rollouts": 3,
        "steps": 3,
        "max_guidance_tokens": MAX_GUIDANCE_TOKENS,
        "tinker_base_model": str(base_model),
        "lora_rank": 8,
        "learning_rate": 1e-3,
        "tinker_load_checkpoint": warm_state,
        "tinker_policy_port": port,
        "executor_preset": "gpt-oss-local",
        "executor_base_url": executor_url,
        "state_dir": str(state_dir),
        "judge_concurrency": 2,
        **extra,
    }
