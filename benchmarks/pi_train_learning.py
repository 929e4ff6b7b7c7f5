"""Does Pi training learn? `answer`'s training and held-out reward per iteration, from a warm start.

A random tiny model's reward is flat: it never writes the reply `atoll pi
train answer` scores (a fenced program, then `FINAL_ANSWER: <value>`), and
a LoRA cannot teach it to: SkyRL tx trains no LoRA on the output layer,
which the tiny model ties to its embeddings initialised at std 0.02, so
whatever the adapter learns no token's probability can pass about half a
percent (the bootstrap trainer's supervised LoRA lowered the NLL of such
replies only from 6.8 to 6.5 nats per token in 60 steps at learning rate
0.05). So the warm start trains all of the tiny model's weights, as the
Guidance-TTT benchmark's does (tests/support/guidance_tiny_model.py): on
non-Euler arithmetic exercises phrased as `answer` phrases its tasks, each
answered with the reply's shape in Python, JavaScript and Julia equally.
The warm model writes the shape and fences Python about a third of the
time, whatever the task asks. A weaker warm start (6-12 exercises, 80-100
steps) left the shape unfinished in half the replies to Euler prompts, and
training then drifted instead of learning.

That is the learnable condition: `answer`'s reward (1 for the exact answer,
less 0.1 when no block of the asked language is shown) can move only through
its code-format term on a model this small, by the policy learning to fence
the language the task asks for. (`hidden` and `shell` have no such condition
the tiny model reaches at this cost: the plugin README, "Does training
learn?", says why; their evidence is tests/pi_train/training/test_update_moves_policy.py.)

Then `answer`'s own training (its tasks, scoring route and trainer: the
cookbook's RL loop in the managed environment, LoRA rank 8 on the local
server) runs on Euler problems 1-2 of the sample store (Python, both
strategies), and the trainer's held-out evaluation (the one `--curriculum`'s
regression window uses) samples problems 3-10, never trained on, before
every iteration's update. It prints, per iteration, the mean reward and the
share of replies with a Python block, on the training groups and on the
held-out ones.

    uv run python benchmarks/pi_train_learning.py [--iterations 12] [--groups-per-batch 4] \\
        [--group-size 8] [--learning-rate 1e-3] [--warm-steps 200] [--warm-dir DIR]
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from atoll.pi_train import ensure_managed_env
from atoll.pi_train.answer import train as answer_train
from atoll.pi_train.bootstrap.guard import default_guard
from atoll.pi_train.training import run, tasks
from atoll.pi_train.training.held_out import HeldOut
from atoll.pi_train.training.held_out import job_fields as held_out_fields

app = typer.Typer(add_completion=False)
ATOLL = str(Path(sys.executable).parent / "atoll")
SUPPORT = Path(__file__).resolve().parents[1] / "tests" / "support"
LANGUAGES = {"python": "Python", "javascript": "JavaScript", "julia": "Julia"}
_PRINT = {"python": "print", "javascript": "console.log", "julia": "println"}
TRAIN_PROBLEMS = (1, 2)
HELD_OUT_PROBLEMS = tuple(range(3, 11))
COLUMNS = {  # heading -> (metric, format)
    "train reward": ("env/all/reward/total", "+.3f"),
    "held-out reward": ("test/env/all/reward/total", "+.3f"),
    "train ```python": ("env/all/code_format", ".2f"),
    "held-out ```python": ("test/env/all/code_format", ".2f"),
    "train FINAL_ANSWER": ("env/all/stated_answer", ".2f"),
    "train tokens": ("env/all/ac_tokens_per_turn", ".1f"),
}


@contextlib.contextmanager
def local_tinker(scratch: Path, base_model: Path) -> Iterator[dict[str, str]]:
    env = {**os.environ, "ATOLL_TINKER_LOCAL_DIR": str(scratch / "local")}
    up = subprocess.run(
        [ATOLL, "tinker", "local", "up", "--base-model", str(base_model), "--print-env"],
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
        subprocess.run([ATOLL, "tinker", "local", "down"], env=env, check=False)


def exercise(rng: random.Random) -> str:
    """A non-Euler arithmetic statement: a title, a few sentences and a worked check.

    As long as the store's statements: a warm start on short prompts does not
    carry over to `answer`'s longer ones.
    """
    kind = rng.randrange(3)
    if kind == 0:
        n = rng.randint(10, 99)
        return (
            "Running total\n\nStart at 1 and count up one at a time until you reach "
            f"{n}. Every number you pass is kept, none is skipped, and each one is added to a "
            "running total that starts at zero; nothing else is ever added or taken away.\n\n"
            "As a check on your reading: stopping at 5, the total is 1 + 2 + 3 + 4 + 5 = 15.\n\n"
            f"What is the total when you stop at {n}?"
        )
    if kind == 1:
        a, b = rng.randint(3, 60), rng.randint(3, 60)
        return (
            f"Crates of jars\n\nA shop stacks {a} crates on its shelf, and every crate holds "
            f"exactly {b} jars. No crate is missing a jar and no jar sits outside a crate, so "
            "the whole stock is the crates times the jars in each.\n\nAs a check on your "
            "reading: 3 crates of 4 jars make 12 jars.\n\nHow many jars does the shop hold?"
        )
    k, n = rng.randint(2, 9), rng.randint(20, 200)
    return (
        f"Steps of {k}\n\nWalk along the positive whole numbers below {n} and mark every one "
        f"that {k} divides exactly, leaving the others alone. The numbers marked are {k}, "
        f"{2 * k}, {3 * k} and so on, for as long as they stay below {n}.\n\nAs a check on "
        "your reading: below 10, steps of 3 mark 3, 6 and 9, which is 3 numbers.\n\n"
        "How many numbers are marked?"
    )


def warm_prompts(count: int) -> list[list[dict[str, str]]]:
    """`count` exercises phrased as `answer` phrases its tasks, under its system prompt."""
    rng, guard = random.Random(0), default_guard()
    exercises: list[list[dict[str, str]]] = []
    while len(exercises) < count:
        statement = exercise(rng)
        asked, strategy = rng.choice(sorted(LANGUAGES)), rng.choice(sorted(tasks.STRATEGIES))
        prompt = (
            f"Exercise {len(exercises) + 1}:\n\n{statement}\n\n"
            f"{tasks.STRATEGIES[strategy].format(language=LANGUAGES[asked])} Show it in one "
            f"fenced ```{asked} block, then end with the line `FINAL_ANSWER: <value>`."
        )
        if guard.violation(prompt) is None:  # no Euler answer or statement text
            exercises.append(
                [
                    {"role": "system", "content": tasks.ANSWER_SYSTEM_PROMPT},
                    {"role": "user", "content": prompt},
                ]
            )
    return exercises


def warm_model(tiny: Path, out: Path, prompts: int, steps: int, lr: float) -> Path:
    """The tiny model fine-tuned (all weights) to answer exercises in `answer`'s reply shape.

    Each exercise is paired with the reply in each of the three languages, equally
    (support/guidance_tiny_model.py, the Guidance-TTT benchmark's warm start): the
    model learns the shape, and which fence to write is left to chance.
    """
    job = {
        "base_model": str(tiny),
        "out": str(out),
        "renderer": "qwen3",
        "prompts": warm_prompts(prompts),
        "answers": [f"```{k}\n{p}(6 * 7)\n```\nFINAL_ANSWER: 42" for k, p in _PRINT.items()],
        "steps": steps,
        "learning_rate": lr,
        "seed": 0,
    }
    started = time.monotonic()
    python = ensure_managed_env(lambda line: None).python
    done = subprocess.run(
        [str(python), str(SUPPORT / "guidance_tiny_model.py")],
        input=json.dumps(job),
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    loss = json.loads(done.stdout.strip().splitlines()[-1])["loss"]
    print(
        f"warm start: {prompts} exercises x 3 replies, {steps} full-weight steps in "
        f"{time.monotonic() - started:.0f} s, loss {loss:.3f}",
        file=sys.stderr,
    )
    return out


def train_answer(
    scratch: Path, store_dir: Path, settings: run.TrainSettings, eval_size: int
) -> list[dict[str, Any]]:
    """`answer`'s trainer on problems 1-2, problems 3-10 held out; its metrics rows."""
    store = tasks.store_at(store_dir)
    train = tasks.answer_tasks(store, settings.languages, 2 * len(TRAIN_PROBLEMS))
    held_out = [
        tasks.answer_task(store, n, language, "direct")
        for n in HELD_OUT_PROBLEMS
        for language in settings.languages
    ]
    out = scratch / "answer"
    manifest = run.prepare_manifest(
        out,
        "benchmarks/pi_train_learning.py",
        settings,
        {"digest": tasks.digest(train), "groups": len(train), "store": store.digest},
        {"steps_per_episode": 1, "tokens_per_turn": settings.max_tokens},
        {"held_out_problems": list(HELD_OUT_PROBLEMS)},
    )
    run.train(
        out,
        "answer",
        settings,
        [t.public() for t in train],
        answer_train.answer_routes(store, [*train, *held_out]),
        tasks.ANSWER_SYSTEM_PROMPT,
        manifest,
        lambda done, total: None,
        lambda line: print(line, file=sys.stderr),
        held_out_fields([t.public() for t in held_out], HeldOut(samples=eval_size, every=1)),
    )
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@app.command()
def main(
    iterations: int = typer.Option(12, "--iterations"),
    groups: int = typer.Option(4, "--groups-per-batch"),
    group_size: int = typer.Option(8, "--group-size"),
    eval_size: int = typer.Option(8, "--eval-group-size"),
    learning_rate: float = typer.Option(1e-3, "--learning-rate"),
    max_tokens: int = typer.Option(64, "--max-tokens"),
    warm_prompts: int = typer.Option(24, "--warm-prompts"),
    warm_steps: int = typer.Option(200, "--warm-steps"),
    warm_learning_rate: float = typer.Option(5e-3, "--warm-learning-rate"),
    warm_dir: Path | None = typer.Option(
        None, "--warm-dir", help="Keep the warm model here; one already there is reused."
    ),
    keep: Path | None = typer.Option(
        None, "--keep", help="Run in this directory and keep it (the run's metrics, logs)."
    ),
) -> None:
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        scratch = keep or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        scratch.mkdir(parents=True, exist_ok=True)
        tiny, store = scratch / "tiny", scratch / "store"
        subprocess.run([ATOLL, "tinker", "tiny-model", str(tiny)], check=True, capture_output=True)
        subprocess.run(
            [ATOLL, "euler", "import", "--sample", "--store", str(store)],
            check=True,
            capture_output=True,
        )
        model = warm_dir or scratch / "warm"
        if not (model / "config.json").is_file():
            warm_model(tiny, model, warm_prompts, warm_steps, warm_learning_rate)
        with local_tinker(scratch, model) as env:
            os.environ.update(env)  # the trainer's key and the server's address
            settings = run.TrainSettings(
                base_model=str(model),
                renderer="qwen3",
                base_url=env["TINKER_BASE_URL"],
                lora_rank=8,
                learning_rate=learning_rate,
                groups_per_batch=groups,
                group_size=group_size,
                iterations=iterations,
                max_tokens=max_tokens,
                languages=("python",),
            )
            trained = time.monotonic()
            rows = train_answer(scratch, store, settings, eval_size)
            seconds = time.monotonic() - trained
    _report(rows)
    Console(width=130).print(
        f"{iterations} iterations of {groups} groups x {group_size} (held out: "
        f"{len(HELD_OUT_PROBLEMS)} groups x {eval_size}) in {seconds:.0f} s, "
        f"{time.monotonic() - started:.0f} s in all; learning rate {learning_rate}, "
        f"warm start {warm_steps} steps at {warm_learning_rate}"
    )


def _report(rows: list[dict[str, Any]]) -> None:
    console = Console(width=130)
    table = Table(
        title=f"answer from the warm state: problems {TRAIN_PROBLEMS[0]}-{TRAIN_PROBLEMS[-1]} "
        f"trained, {HELD_OUT_PROBLEMS[0]}-{HELD_OUT_PROBLEMS[-1]} held out"
    )
    table.add_column("iteration", justify="right")
    for column in COLUMNS:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(str(row["step"]), *(_cell(row.get(k), f) for k, f in COLUMNS.values()))
    console.print(table)
    for key, label in (("env/all/", "train"), ("test/env/all/", "held-out")):
        curve = [r[f"{key}reward/total"] for r in rows if f"{key}reward/total" in r]
        window = max(1, min(3, len(curve) // 2))
        console.print(
            f"{label}: mean reward {_mean(curve[:window]):+.3f} over the first {window} "
            f"iterations, {_mean(curve[-window:]):+.3f} over the last {window}"
        )


def _cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


if __name__ == "__main__":
    app()
