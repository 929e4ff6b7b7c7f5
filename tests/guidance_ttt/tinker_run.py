"""Guidance-TTT runs with training=tinker on a local Tinker server, for tests and benchmarks.

The guidance policy is a tiny model that already answers guidance prompts
with a guidance block naming one of a few words (`guidance_base_model`: the
session's random tiny model, fully fine-tuned for a minute on CPU; a random
tiny model never writes a well-formed block, and its rank-8 LoRA learns the
format too slowly to warm it through Tinker). It serves from a local SkyRL tx
server of its own. The executor is scripted by word (`WordExecutor`): the
guidance's word decides which shelf packer it writes, so the real judge
scores different guidance differently, and groups have rewards to learn
from. Reef runs in front of the run's policy server, as the reef-stack job
plugin would start it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from packers import packer
from support.guidance_run import write_task
from support.openai_server import Reply
from support.ports import free_port
from support.reef_server import ReefServer

from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.prompting.prompts import guidance_prompt, guidance_request
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification

REPO = Path(__file__).resolve().parents[2]
POLYOMINO = REPO / "tasks" / "polyomino_packing"
SUPPORT = REPO / "tests" / "support"
MAX_GUIDANCE_TOKENS = 48
# The words the base model was taught to name, and the packer each makes the executor write.
# A factor of 0 makes a program that does not compile (reward 0).
WORDS = {"wide": "1.0", "tall": "0.5", "flat": "0"}
RENDERER = "qwen3"


def polyomino_task(directory: Path) -> Task:
    """Polyomino packing (judge problem 0) with its seed, under a one-line statement.

    The task's full statement makes a 4,500-token prompt for the tiny model's
    tokenizer; every step would pay for it in sampling and training on CPU,
    and the method's behaviour does not depend on the statement's length.
    """
    task = write_task(directory)
    solution = directory / "solution"
    solution.mkdir()
    for name in ("solution.cpp", "summary.txt"):
        (solution / name).write_bytes((POLYOMINO / "solution" / name).read_bytes())
    return task


def guidance_prompts(task: Task) -> list[list[dict[str, str]]]:
    """Guidance prompts as a run writes them: the seed's, and a child's the word executor wrote.

    The scores and messages are those the two-case judge gives these programs,
    so that the prompts the model is taught on are the prompts it is asked.
    """
    parents = [
        ((POLYOMINO / "solution" / "summary.txt").read_text(), 24.4900958),
        (summary_for(WORDS["tall"]), 45.9308802),
    ]
    prompts = []
    for summary, score in parents:
        verification = Verification(Status.VALID, score, score, "2 ok")
        entry = Entry(program="", summary=summary, verification=verification)
        prompts.append(guidance_request(guidance_prompt(task, entry), "tiny", 1)["messages"])
    return prompts


def _managed(script: str, job: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    from atoll.pi_train import ensure_managed_env

    managed = ensure_managed_env(lambda line: None)
    done = subprocess.run(
        [str(managed.python), str(SUPPORT / script)],
        input=json.dumps(job),
        # PYTHONFAULTHANDLER: a crash says where, in every thread, in the error below.
        env={**env, "HF_HUB_OFFLINE": "1", "PYTHONFAULTHANDLER": "1"},
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, (
        f"{script} exited {done.returncode}:\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def guidance_base_model(tiny_model: Path, task: Task, out: Path) -> Path:
    """The tiny model taught to answer guidance prompts with `<guidance>WORD</guidance>`."""
    job = {
        "base_model": str(tiny_model),
        "out": str(out),
        "renderer": RENDERER,
        "prompts": guidance_prompts(task),
        "answers": [f"<guidance>{word}</guidance>" for word in WORDS],
        "steps": 250,
        "learning_rate": 5e-3,
        "seed": 0,
    }
    _managed("guidance_tiny_model.py", job, os.environ)
    return out


def lora_start(env: Mapping[str, str], base_model: Path, task: Task, name: str) -> str:
    """A training state of one supervised step, for `tinker_load_checkpoint` to start from."""
    job = {
        "base_url": env["TINKER_BASE_URL"],
        "base_model": str(base_model),
        "renderer": RENDERER,
        "lora_rank": 8,
        "learning_rate": 1e-4,
        "steps": 1,
        "name": name,
        "examples": [
            {"messages": guidance_prompts(task)[0], "answer": f"<guidance>{word}</guidance>"}
            for word in WORDS
        ],
    }
    return str(_managed("tinker_warm_start.py", job, env)["state_path"])


_WORD = re.compile(r"<guidance>\s*(\w+)\s*</guidance>")


def summary_for(factor: str) -> str:
    return f"Shelf packer, tallest first, shelves {factor} x sqrt(area) wide."


class WordExecutor:
    """Writes the shelf packer the guidance's word names; any other guidance keeps the parent's."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        prompt = str((request.get("messages") or [{}])[-1].get("content", ""))
        found = _WORD.search(prompt)
        factor = WORDS.get(found.group(1), "1.5") if found else "1.5"
        return Reply(
            content=(
                f"<solution>\n```cpp\n{packer(factor)}```\n</solution>\n"
                f"<summary>{summary_for(factor)}</summary>"
            ),
            completion_tokens=300,
        )


@contextmanager
def reef_in_front_of_policy(run_dir: Path) -> Iterator[tuple[ReefServer, int]]:
    """The real Reef in upstream mode, proxying to the port the run's policy server will take."""
    port = free_port()
    upstream = SimpleNamespace(root_url=f"http://127.0.0.1:{port}")
    reef = ReefServer(upstream, run_dir).start()  # type: ignore[arg-type]
    try:
        yield reef, port
    finally:
        reef.stop()


def tinker_settings(
    state_dir: Path, base_model: Path, port: int, executor_url: str, **extra: Any
) -> dict[str, Any]:
    return {
        "training": "tinker",
        "groups": 2,
        "rollouts": 4,
        "steps": 3,
        "max_guidance_tokens": MAX_GUIDANCE_TOKENS,
        "tinker_base_model": str(base_model),
        "renderer": RENDERER,
        "lora_rank": 8,
        "learning_rate": 1e-3,
        "tinker_policy_port": port,
        "executor_preset": "gpt-oss-local",
        "executor_base_url": executor_url,
        "state_dir": str(state_dir),
        "judge_concurrency": 2,
        **extra,
    }
