"""`atoll pi train ...` and `atoll tinker ...`: the command lines of atoll-pi-train.

Only Typer and Rich are imported here; each command imports its own module
when it runs, so `atoll --help` stays fast. Bad input and missing
prerequisites are one error line and exit status 2.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import typer

from atoll.pi_train.training.command import (
    fail,
    run_with_progress,
    stderr,
    stdout,
    train_settings,
)
from atoll.pi_train.training.load_checkpoint import load_checkpoint_option

train_app = typer.Typer(
    help="Train a Pi policy on Tinker: hidden-variant tool RL, answer-only GRPO.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

tinker_app = typer.Typer(
    help="A Tinker-API service on this machine (SkyRL tx, CPU) and tiny test models.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
local_app = typer.Typer(help="The local SkyRL tx server: up, status, down.", no_args_is_help=True)
tinker_app.add_typer(local_app, name="local")


@train_app.callback()
def _train_group() -> None:
    """Train a Pi policy on Tinker: hidden-variant tool RL, answer-only GRPO."""


@tinker_app.callback()
def _tinker_group() -> None:
    """A Tinker-API service on this machine (SkyRL tx, CPU) and tiny test models."""


# --- `atoll pi train check` lives in atoll.pi_train.hidden.check_command (the task-family half of
# --- the distribution); it is mounted here when that module is present.
if importlib.util.find_spec("atoll.pi_train.hidden.check_command") is not None:
    from atoll.pi_train.hidden.check_command import check as _check

    train_app.command("check")(_check)


# --- `atoll pi train shell` lives in atoll.pi_train.shell.command (file/shell RL).
if importlib.util.find_spec("atoll.pi_train.shell.command") is not None:
    from atoll.pi_train.shell.command import shell as _shell

    train_app.command("shell")(_shell)

# --- `atoll pi train promote` lives in atoll.pi_train.promotion.command.
from atoll.pi_train.promotion.command import promote as _promote  # noqa: E402

train_app.command("promote")(_promote)


def _say(line: str) -> None:
    stderr.print(line)


@tinker_app.command("install")
def install_cmd() -> None:
    """Build the managed Python 3.11 environment (trainer and SkyRL tx) unless it is there."""
    from atoll.pi_train import env

    try:
        present = env.ensure(_say)
    except env.EnvironmentUnavailable as exc:
        fail(str(exc))
    stdout.print(f"managed Tinker environment (Python {env.PYTHON_VERSION}) at {present.root}")


@tinker_app.command("tiny-model")
def tiny_model_cmd(
    out: Path = typer.Argument(..., help="Directory to write the model and tokenizer into."),
    seed: int = typer.Option(0, "--seed", help="Same seed, same files."),
) -> None:
    """Build a tiny random Qwen3-architecture model and its tokenizer (nothing downloaded)."""
    from atoll.pi_train import env
    from atoll.pi_train.local import tiny_model

    try:
        built = tiny_model.build(out, seed, _say)
    except env.EnvironmentUnavailable as exc:
        fail(str(exc))
    stdout.print(f"{out}: {built['parameters']} parameters (seed {seed})")


@local_app.command("up")
def local_up(
    base_model: Path | None = typer.Option(
        None, "--base-model", help="Model directory \\[default: the tiny model of seed 0]."
    ),
    port: int | None = typer.Option(
        None, "--port", help="Port on 127.0.0.1 \\[default: a free one]."
    ),
    print_env: bool = typer.Option(
        False, "--print-env", help="Print only the export lines (for `eval`)."
    ),
) -> None:
    """Start SkyRL tx on 127.0.0.1 from the managed environment; wait until it answers."""
    from atoll.pi_train import env
    from atoll.pi_train.local import server as local_server

    try:
        state = local_server.up(_say, base_model=base_model, port=port)
    except (env.EnvironmentUnavailable, local_server.ServerError) as exc:
        fail(str(exc))
    if not print_env:
        stderr.print(
            f"local Tinker server at {state.base_url} (pid {state.pid}, {state.base_model})"
        )
    print(state.exports())


@local_app.command("status")
def local_status() -> None:
    """Say whether the local server runs, and where; exit 1 if it does not."""
    from atoll.pi_train.local import server as local_server

    state = local_server.status()
    if state is None:
        stdout.print("no local Tinker server")
        raise typer.Exit(1)
    health = "answers" if local_server.answers(state.base_url) else "does not answer"
    stdout.print(f"{state.base_url} (pid {state.pid}) {health}; base model {state.base_model}")


@local_app.command("down")
def local_down() -> None:
    """Stop the local server and every process it started."""
    from atoll.pi_train.local import server as local_server

    try:
        state = local_server.down()
    except local_server.ServerError as exc:
        fail(str(exc), code=1)
    stdout.print("no local Tinker server" if state is None else f"stopped {state.base_url}")


@tinker_app.command("serve")
def serve_cmd(
    base_model: str = typer.Option(
        ..., "--base-model", help="Tinker base model name, or a model directory."
    ),
    model_path: str | None = typer.Option(
        None, "--model-path", help="A tinker:// sampler checkpoint (an adapter) to serve."
    ),
    state_path: str | None = typer.Option(
        None,
        "--state-path",
        help="The training state saved with --model-path, reloaded to serve it (SkyRL tx).",
    ),
    renderer: str = typer.Option(..., "--renderer", help="tinker-cookbook renderer name."),
    port: int | None = typer.Option(
        None, "--port", help="Port on 127.0.0.1 \\[default: a free one]."
    ),
    tinker_url: str | None = typer.Option(
        None, "--tinker-url", help="Tinker API address \\[default: $TINKER_BASE_URL, else hosted]."
    ),
    served_model_name: str | None = typer.Option(
        None,
        "--served-model-name",
        help="The model name callers send \\[default: the base model's].",
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=1, help="Cap on the tokens one reply may sample."
    ),
    ready_file: Path | None = typer.Option(
        None, "--ready-file", help="Written (JSON: base_url, model, pid) once the server answers."
    ),
) -> None:
    """Serve OpenAI chat completions on 127.0.0.1 over a Tinker sampling client, until stopped."""
    from atoll.pi_train.serving import command as serve_command

    serve_command.run(
        base_model, model_path, state_path, renderer, port, tinker_url, served_model_name, max_tokens,
        ready_file, _say, fail,
    )  # fmt: skip


_BASE_MODEL = typer.Option(
    ..., "--base-model", help="Tinker base model name, or a model directory."
)
_RENDERER = typer.Option("qwen3", "--renderer", help="tinker-cookbook renderer name.")
_BASE_URL = typer.Option(
    None,
    "--base-url",
    help=(
        "Tinker API address. Without this flag: $TINKER_BASE_URL when it is set (which "
        "`atoll tinker local up --print-env` exports: the local server), otherwise hosted Tinker."
    ),
)
_LORA_RANK = typer.Option(8, "--lora-rank", help="LoRA rank.")
_LR = typer.Option(1e-4, "--learning-rate", help="Adam learning rate.")
_GROUPS = typer.Option(2, "--groups-per-batch", help="Groups (tasks) per iteration.")
_GROUP_SIZE = typer.Option(4, "--group-size", help="Rollouts per group.")
_ITERATIONS = typer.Option(10, "--iterations", help="Iterations in total (a rerun resumes).")
_MAX_TOKENS = typer.Option(512, "--max-tokens", help="Sampled tokens per turn.")
_OUT = typer.Option(..., "--out", help="Run directory (rerun to resume).")
# The held-out evaluation and the batches' seed (hidden and shell; training.held_out).
_EVAL_INSTANCES = typer.Option(
    1,
    "--eval-instances",
    help="Held-out (eval namespace) instances per family and language; 0: no held-out set.",
)
_EVAL_SAMPLES = typer.Option(
    1, "--eval-samples", help="Samples of each held-out task: pass@k for k up to this."
)
_EVAL_EVERY = typer.Option(
    10,
    "--eval-every",
    help="Evaluate at iterations 0, N, 2N... (before that iteration's update); 0: never.",
)
_BATCH_SEED = typer.Option(
    0, "--batch-seed", help="Seed of the order mixing families and languages in every batch."
)


@train_app.command("hidden")
def hidden_cmd(
    base_model: str = _BASE_MODEL,
    renderer: str = _RENDERER,
    base_url: str | None = _BASE_URL,
    lora_rank: int = _LORA_RANK,
    learning_rate: float = _LR,
    groups_per_batch: int = _GROUPS,
    group_size: int = _GROUP_SIZE,
    iterations: int = _ITERATIONS,
    max_tokens: int = _MAX_TOKENS,
    languages: str = typer.Option("python,javascript", "--languages", help="Comma-separated."),
    out: Path = _OUT,
    load_checkpoint: str | None = load_checkpoint_option(),
    sandbox_url: str | None = typer.Option(
        None,
        "--sandbox-url",
        help="SandboxFusion-compatible sandbox on loopback \\[default: one started in-process].",
    ),
    eval_instances: int = _EVAL_INSTANCES,
    eval_samples: int = _EVAL_SAMPLES,
    eval_every: int = _EVAL_EVERY,
    batch_seed: int = _BATCH_SEED,
) -> None:
    """Hidden-variant tool RL: one group per (family, hidden case set, language)."""
    from atoll.pi_train.hidden.train import train_hidden
    from atoll.pi_train.training.held_out import HeldOut

    evaluation = HeldOut(instances=eval_instances, samples=eval_samples, every=eval_every)
    if (why := evaluation.check()) is not None:
        fail(why)

    settings = train_settings(
        base_model,
        renderer,
        base_url,
        lora_rank,
        learning_rate,
        groups_per_batch,
        group_size,
        iterations,
        max_tokens,
        languages,
        load_checkpoint,
    )
    run_with_progress(
        lambda progress, say: train_hidden(
            settings,
            out,
            sandbox_url,
            progress,
            say,
            load_from=load_checkpoint,
            evaluation=evaluation,
            batch_seed=batch_seed,
        )
    )


@train_app.command("answer")
def answer_cmd(
    base_model: str = _BASE_MODEL,
    renderer: str = _RENDERER,
    base_url: str | None = _BASE_URL,
    lora_rank: int = _LORA_RANK,
    learning_rate: float = _LR,
    groups_per_batch: int = _GROUPS,
    group_size: int = _GROUP_SIZE,
    iterations: int = _ITERATIONS,
    max_tokens: int = _MAX_TOKENS,
    languages: str = typer.Option(
        "python,javascript,julia", "--languages", help="Comma-separated."
    ),
    out: Path = _OUT,
    load_checkpoint: str | None = load_checkpoint_option(),
    store: Path = typer.Option(..., "--store", help="The store made by `atoll euler import`."),
    curriculum: Path | None = typer.Option(
        None,
        "--curriculum",
        help="An `atoll euler curriculum` state directory: groups from its frontier and "
        "mastered problems in the replay mix \\[default: problems in numerical order].",
    ),
    replay_mix: str = typer.Option(
        "0.7,0.2,0.1", "--replay", help="Frontier, recent and older mastered shares."
    ),
    recent: int = typer.Option(3, "--recent", help="The last N mastered problems are recent."),
    regression_window: int = typer.Option(
        2,
        "--regression-window",
        help="Problems mastered first kept for evaluation only (never a gradient).",
    ),
    regression_every: int = typer.Option(
        5, "--regression-every", help="Evaluate the regression window every N iterations."
    ),
) -> None:
    """Answer-only GRPO on the Euler store: one group per problem x language x strategy."""
    from atoll.pi_train.answer.replay import ReplayError, ReplayMix
    from atoll.pi_train.answer.train import train_answer

    try:
        mix = ReplayMix.parse(
            replay_mix,
            recent_window=recent,
            regression_window=regression_window,
            regression_every=regression_every,
        )
    except ReplayError as exc:
        fail(str(exc))

    settings = train_settings(
        base_model,
        renderer,
        base_url,
        lora_rank,
        learning_rate,
        groups_per_batch,
        group_size,
        iterations,
        max_tokens,
        languages,
        load_checkpoint,
    )
    run_with_progress(
        lambda progress, say: train_answer(
            settings, out, store, progress, say, curriculum, mix, load_from=load_checkpoint
        )
    )
