"""`atoll pi bootstrap build|render|train`: the tool-protocol corpus and its supervised training.

Only Typer and Rich are imported here; each command imports its own module
when it runs. Bad input is one error line and exit status 2; a run that
started and failed is 1.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from atoll.pi_train.training.load_checkpoint import load_checkpoint_option

_err = Console(stderr=True, highlight=False, soft_wrap=True)
_out = Console(highlight=False, soft_wrap=True)

bootstrap_app = typer.Typer(
    help="The tool-protocol bootstrap: a synthetic corpus for Pi's tools, and SFT on it.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@bootstrap_app.callback()
def _group() -> None:
    """The tool-protocol bootstrap: a synthetic corpus for Pi's tools, and SFT on it."""


def _fail(message: str, code: int = 2) -> None:
    from rich.markup import escape

    _err.print(f"[bold red]error:[/bold red] {escape(message)}")
    raise typer.Exit(code)


def _model(base_model: str) -> str:
    return str(Path(base_model).resolve()) if Path(base_model).is_dir() else base_model


@bootstrap_app.command("build")
def build_cmd(
    out: Path = typer.Argument(..., help="Directory to write the corpus into."),
    seed: int = typer.Option(0, "--seed", help="Same seed (and stores), same bytes."),
    conversations: int = typer.Option(200, "--conversations", help="Conversations to write."),
    store: list[Path] = typer.Option(
        [],
        "--store",
        help="An Euler store whose answers and statements must not appear (repeatable); "
        "atoll-euler's sample store is always checked.",
    ),
) -> None:
    """Write the synthetic tool-protocol corpus and its manifest (counts and hashes)."""
    from atoll.euler import StoreError
    from atoll.pi_train.bootstrap import build, guard

    try:
        checked = guard.default_guard(store)
        manifest = build.write(out, seed, conversations, checked)
    except (StoreError, build.CorpusInputError) as exc:
        _fail(str(exc))
    _out.print(
        f"{out}: {manifest['conversations']} conversations, {manifest['examples']} examples "
        f"(sha256 {manifest['files'][build.CONVERSATIONS][:16]})"
    )


@bootstrap_app.command("render")
def render_cmd(
    corpus: Path = typer.Argument(..., help="A corpus made by `atoll pi bootstrap build`."),
    base_model: str = typer.Option(..., "--base-model", help="Model name or directory."),
    renderer: str = typer.Option("qwen3", "--renderer", help="tinker-cookbook renderer name."),
    out: Path = typer.Option(..., "--out", help="JSONL file for the rendered examples."),
) -> None:
    """Render every example (one conversation prefix per assistant target) to tokens and weights."""
    from atoll.pi_train import env
    from atoll.pi_train.bootstrap import build, trainer
    from atoll.pi_train.training.run import RunError

    try:
        count = trainer.render(corpus, _model(base_model), renderer, out, _err.print)
    except (build.CorpusInputError, env.EnvironmentUnavailable) as exc:
        _fail(str(exc))
    except RunError as exc:
        _fail(str(exc), code=1)
    _out.print(f"{out}: {count} examples")


@bootstrap_app.command("train")
def train_cmd(
    corpus: Path = typer.Argument(..., help="A corpus made by `atoll pi bootstrap build`."),
    base_model: str = typer.Option(..., "--base-model", help="Model name or directory."),
    out: Path = typer.Option(..., "--out", help="Run directory (rerun to resume)."),
    steps: int = typer.Option(..., "--steps", help="Optimizer steps."),
    batch_size: int = typer.Option(8, "--batch-size", help="Examples per step."),
    renderer: str = typer.Option("qwen3", "--renderer", help="tinker-cookbook renderer name."),
    base_url: str | None = typer.Option(
        None,
        "--base-url",
        help="Tinker API address \\[default: $TINKER_BASE_URL, else hosted Tinker].",
    ),
    lora_rank: int = typer.Option(8, "--lora-rank", help="LoRA rank."),
    learning_rate: float = typer.Option(1e-4, "--learning-rate", help="Adam learning rate."),
    max_length: int = typer.Option(
        4096, "--max-length", help="Tokens per example; longer ones are cut from the right."
    ),
    load_checkpoint: str | None = load_checkpoint_option(),
) -> None:
    """Supervised training on the corpus with tinker-cookbook's loop (LAST_ASSISTANT_MESSAGE)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from atoll.pi_train import env
    from atoll.pi_train.bootstrap.trainer import BootstrapSettings, train
    from atoll.pi_train.training.load_checkpoint import LoadCheckpointError, resolve
    from atoll.pi_train.training.run import RunError, RunInputError, default_base_url

    for name, value in (
        ("--steps", steps),
        ("--batch-size", batch_size),
        ("--lora-rank", lora_rank),
        ("--max-length", max_length),
    ):
        if value < 1:
            _fail(f"{name} must be at least 1 (got {value})")
    try:
        state = None if load_checkpoint is None else resolve(load_checkpoint)
    except LoadCheckpointError as exc:
        _fail(str(exc))
    settings = BootstrapSettings(
        base_model=_model(base_model),
        renderer=renderer,
        base_url=base_url or default_base_url(),
        lora_rank=lora_rank,
        learning_rate=learning_rate,
        batch_size=batch_size,
        steps=steps,
        max_length=max_length,
        load_checkpoint=state,
    )
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err,
    ) as bar:
        task = bar.add_task("steps", total=steps)
        try:
            written = train(
                corpus,
                settings,
                out,
                lambda done, total: bar.update(task, completed=done, total=total),
                lambda line: bar.console.print(line),
                load_from=load_checkpoint,
            )
        except (RunError, env.EnvironmentUnavailable) as exc:
            bar.stop()
            failed = isinstance(exc, RunError) and not isinstance(exc, RunInputError)
            _fail(str(exc), code=1 if failed else 2)
    _out.print(str(written))
