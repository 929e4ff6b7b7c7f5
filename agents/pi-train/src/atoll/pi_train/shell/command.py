"""`atoll pi train shell`: file/shell RL with Pi's four tools (the design's `train_pi_grpo`).

Mounted under `atoll pi train` by cli.py. It takes the common training flags
of `hidden` and `answer` (the same functions, atoll.pi_train.training.command,
turn them into settings and show the progress bar), plus the sandbox, the episode bounds and the held-out
evaluation.
"""

from __future__ import annotations

from pathlib import Path

import typer

from atoll.pi_train.shell.episode import Bounds
from atoll.pi_train.training.command import fail, run_with_progress, train_settings
from atoll.pi_train.training.load_checkpoint import load_checkpoint_option

_DEFAULTS = Bounds()


def shell(
    base_model: str = typer.Option(
        ..., "--base-model", help="Tinker base model name, or a model directory."
    ),
    renderer: str = typer.Option("qwen3", "--renderer", help="tinker-cookbook renderer name."),
    base_url: str | None = typer.Option(
        None,
        "--base-url",
        help="Tinker API address (default: $TINKER_BASE_URL when set, otherwise hosted Tinker).",
    ),
    lora_rank: int = typer.Option(8, "--lora-rank", help="LoRA rank."),
    learning_rate: float = typer.Option(1e-4, "--learning-rate", help="Adam learning rate."),
    groups_per_batch: int = typer.Option(2, "--groups-per-batch", help="Groups per iteration."),
    group_size: int = typer.Option(4, "--group-size", help="Rollouts per group."),
    iterations: int = typer.Option(10, "--iterations", help="Iterations in total (rerun resumes)."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Sampled tokens per turn."),
    languages: str = typer.Option(
        "julia,python,javascript",
        "--languages",
        help="Comma-separated; Julia is weighted 3x, and left out where the sandbox lacks it.",
    ),
    out: Path = typer.Option(..., "--out", help="Run directory (rerun to resume)."),
    load_checkpoint: str | None = load_checkpoint_option(),
    sandbox_url: str | None = typer.Option(
        None,
        "--sandbox-url",
        help="SandboxFusion-compatible sandbox on loopback (default: one started in-process).",
    ),
    max_steps: int = typer.Option(_DEFAULTS.steps, "--max-steps", help="Policy turns per episode."),
    max_tool_calls: int = typer.Option(
        _DEFAULTS.tool_calls, "--max-tool-calls", help="Tool calls per episode."
    ),
    max_episode_tokens: int = typer.Option(
        _DEFAULTS.episode_tokens,
        "--max-episode-tokens",
        help="Tokens per episode, prompt and turns together.",
    ),
    eval_instances: int = typer.Option(
        1,
        "--eval-instances",
        help="Held-out instances per family and language (balanced); 0: no evaluation.",
    ),
    eval_every: int = typer.Option(
        10,
        "--eval-every",
        help="Evaluate at iterations 0, N, 2N... (before that iteration's update); 0: never.",
    ),
    eval_samples: int = typer.Option(
        1, "--eval-samples", help="Samples of each held-out task: pass@k for k up to this."
    ),
    batch_seed: int = typer.Option(
        0, "--batch-seed", help="Seed of the order mixing families and languages in every batch."
    ),
) -> None:
    """Pi-shaped file/shell RL: read, write, edit and bash over one fresh workspace per episode."""
    from atoll.pi_train.shell.train import ShellOptions, train_shell

    for name, value in (
        ("--max-steps", max_steps),
        ("--max-tool-calls", max_tool_calls),
        ("--max-episode-tokens", max_episode_tokens),
    ):
        if value < 1:
            fail(f"{name} must be at least 1 (got {value})")
    for name, value in (("--eval-instances", eval_instances), ("--eval-every", eval_every)):
        if value < 0:
            fail(f"{name} must be at least 0 (got {value})")
    if eval_samples < 1:
        fail(f"--eval-samples must be at least 1 (got {eval_samples})")
    if max_tokens >= max_episode_tokens:
        fail(f"--max-tokens ({max_tokens}) must be below --max-episode-tokens")
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
    options = ShellOptions(
        sandbox_url=sandbox_url,
        bounds=Bounds(
            steps=max_steps, tool_calls=max_tool_calls, episode_tokens=max_episode_tokens
        ),
        eval_instances=eval_instances,
        eval_every=eval_every,
        eval_samples=eval_samples,
        batch_seed=batch_seed,
    )
    run_with_progress(
        lambda progress, say: train_shell(
            settings, out, options, progress, say, load_from=load_checkpoint
        )
    )
