"""`atoll pi train ...` and `atoll tinker ...`: the command lines of atoll-pi-train.

Only Typer and Rich are imported here; each command imports its own module
when it runs, so `atoll --help` stays fast. Bad input and missing
prerequisites are one error line and exit status 2.
"""

from __future__ import annotations

import importlib.util

import typer
from rich.console import Console

_err = Console(stderr=True, highlight=False, soft_wrap=True)
_out = Console(highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> None:
    from rich.markup import escape

    _err.print(f"[bold red]error:[/bold red] {escape(message)}")
    raise typer.Exit(code)


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


# --- `atoll pi train check` lives in atoll.pi_train.check_command (the task-family half of
# --- the distribution); it is mounted here when that module is present.
if importlib.util.find_spec("atoll.pi_train.check_command") is not None:
    from atoll.pi_train.check_command import check as _check

    train_app.command("check")(_check)
