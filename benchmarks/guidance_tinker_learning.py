"""Does training=tinker learn? The share of rewarded guidance, step by step, trained and not.

A toy version of the method's loop, on CPU: the guidance model is the tiny
model taught to answer guidance prompts with `<guidance>WORD</guidance>` for
one of three words, uniformly at first (tests/guidance_ttt/tinker_run.py);
the scripted executor writes the shelf packer the word names (one word's
packer does not compile), and the real embedded judge scores it on two cases
of polyomino packing. The same search runs twice from the same base model,
with the same seeds of everything but the sampler:

- `training=tinker`: each step's samples train the policy (TTT-Discover's
  entropic advantage, one importance-sampling step) through the local SkyRL
  tx server;
- `training=off`: the same policy server serves the base weights, nothing is
  trained.

It prints, per step, the share of guidance that earned a reward (a
well-formed block naming a word whose program compiles) and the mean
reward, for both runs: the trained curves should rise, the others stay flat
(within sampling noise).

    uv run python benchmarks/guidance_tinker_learning.py [--steps 10] [--groups 2] [--rollouts 8]
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "guidance_ttt")]

from support.judge import small_judge  # noqa: E402
from support.openai_server import ScriptedOpenAIServer  # noqa: E402
from tinker_run import (  # noqa: E402
    WORDS,
    WordExecutor,
    guidance_base_model,
    polyomino_task,
    reef_in_front_of_policy,
    tinker_settings,
)

from atoll.guidance_ttt.agent import agent_config  # noqa: E402
from atoll.guidance_ttt.contract import Task  # noqa: E402
from atoll.guidance_ttt.services.cancel import Cancellation  # noqa: E402
from atoll.guidance_ttt.services.wiring import run_search  # noqa: E402
from atoll.guidance_ttt.state.run_dir import RunDir  # noqa: E402
from atoll.guidance_ttt.state.step_journal import read_step  # noqa: E402
from atoll.guidance_ttt.training.tinker_policy import (  # noqa: E402
    PolicySettings,
    PolicyStart,
    serving_policy,
)

app = typer.Typer(add_completion=False)
_WORD = re.compile(r"<guidance>\s*(\w+)\s*</guidance>")


@contextlib.contextmanager
def local_tinker(scratch: Path, base_model: Path) -> Iterator[dict[str, str]]:
    atoll = str(Path(sys.executable).parent / "atoll")
    env = {**os.environ, "ATOLL_TINKER_LOCAL_DIR": str(scratch / "local")}
    up = subprocess.run(
        [atoll, "tinker", "local", "up", "--base-model", str(base_model), "--print-env"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    for line in up.stdout.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    try:
        yield env
    finally:
        subprocess.run([atoll, "tinker", "local", "down"], env=env, check=False)


def run(
    mode: str,
    scratch: Path,
    task: Task,
    task_dir: Path,
    model: Path,
    env: dict[str, str],
    judge: str,
    settings: dict[str, Any],
) -> list[dict[str, Any]]:
    """One search in `mode`; per step, the words its guidance named and its rewards."""
    state = scratch / f"state-{mode}"
    with (
        reef_in_front_of_policy(scratch / f"reef-{mode}") as (reef, port),
        ScriptedOpenAIServer(WordExecutor()) as executor,
        contextlib.ExitStack() as stack,
    ):
        values = tinker_settings(state, model, port, executor.base_url, **settings)
        if mode == "off":  # the same base weights, served, never trained
            policy = PolicySettings(
                str(model), values["renderer"], env["TINKER_BASE_URL"], 8, port, "tiny"
            )
            start = PolicyStart(0, None, None, f"base:{model}")
            stack.enter_context(
                serving_policy(policy, start, scratch / "off-policy.log", env, Cancellation())
            )
            values = {k: v for k, v in values.items() if not k.startswith("tinker_")}
            values.update(training="off", guidance_base_url=f"http://127.0.0.1:{port}/v1")
        environ = {
            **env,
            "REEF_URL": reef.url,
            "REEF_TOKEN": reef.token,
            "FRONTIERCS_JUDGE_URL": judge,
        }
        run_search(
            agent_config(values), task, task_dir, environ=environ, console=Console(stderr=True)
        )
    steps = []
    for step in range(int(settings["steps"])):
        journal = read_step(RunDir(state).step_journal(step), step)
        words = Counter()
        rewards: dict[str, list[float]] = defaultdict(list)
        for slot, done in journal.finished.items():
            sample = journal.samples.get(slot)
            found = _WORD.search(sample.content) if sample else None
            word = found.group(1) if found and found.group(1) in WORDS else "(other)"
            words[word] += 1
            rewards[word].append(done.rollout.verification.reward)
        total = sum(words.values())
        every = [r for rs in rewards.values() for r in rs]
        steps.append(
            {
                "words": dict(words),
                "rewards": dict(rewards),
                "total": total,
                "mean": sum(every) / total,
                "paid": sum(1 for r in every if r > 0) / total,
            }
        )
    return steps


@app.command()
def main(
    steps: int = typer.Option(10, "--steps"),
    groups: int = typer.Option(2, "--groups"),
    rollouts: int = typer.Option(8, "--rollouts"),
    learning_rate: float = typer.Option(3e-4, "--learning-rate"),
    kl_coef: float = typer.Option(0.1, "--kl-coef"),
) -> None:
    console = Console(width=100)
    atoll = str(Path(sys.executable).parent / "atoll")
    with tempfile.TemporaryDirectory() as name:
        scratch = Path(name)
        tiny = scratch / "tiny"
        subprocess.run([atoll, "tinker", "tiny-model", str(tiny)], check=True, capture_output=True)
        task = polyomino_task(scratch / "task")
        model = guidance_base_model(tiny, task, scratch / "guidance-model")
        settings = {
            "steps": steps,
            "groups": groups,
            "rollouts": rollouts,
            "learning_rate": learning_rate,
            "kl_coef": kl_coef,
            "max_guidance_tokens": 48,
        }
        with small_judge(scratch / "judge") as judge, local_tinker(scratch, model) as env:
            curves = {
                mode: run(mode, scratch, task, scratch / "task", model, env, judge, settings)
                for mode in ("tinker", "off")
            }
    paid: dict[str, list[float]] = defaultdict(list)
    for curve in curves.values():
        for row in curve:
            for word, values in row["rewards"].items():
                paid[word].extend(values)
    table = Table(title="Share of guidance that earned a reward, and mean reward, per step")
    for column in ("step", "tinker paid", "tinker reward", "off paid", "off reward"):
        table.add_column(column, justify="right")
    for step in range(steps):
        t, o = curves["tinker"][step], curves["off"][step]
        table.add_row(
            str(step),
            f"{t['paid']:.2f}",
            f"{t['mean']:.3f}",
            f"{o['paid']:.2f}",
            f"{o['mean']:.3f}",
        )
    console.print(table)
    window = min(3, steps)
    for mode, curve in curves.items():
        first, last = curve[:window], curve[-window:]
        console.print(
            f"{mode}: mean reward {_mean(r['mean'] for r in first):.2f} over the first {window} "
            f"steps, {_mean(r['mean'] for r in last):.2f} over the last {window}; share paid "
            f"{_mean(r['paid'] for r in first):.2f} -> {_mean(r['paid'] for r in last):.2f}"
        )
    means = {w: round(sum(v) / len(v), 3) for w, v in paid.items()}
    console.print(f"mean reward by word over both runs: {json.dumps(means, sort_keys=True)}")


def _mean(values: Iterator[float]) -> float:
    found = list(values)
    return sum(found) / len(found)


if __name__ == "__main__":
    app()
