"""`atoll emit <name> ...`: run a task emitter that a plugin registered with `atoll_emitters`.

An emitter record's target is a Typer app; `atoll emit` lists the installed
emitters and hands the rest of the command line to the one named, importing
only that one. This keeps the host generic: a new emitter needs nothing but
its registration.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from atoll.core.cli import plugin_command
from atoll.core.records import Kind
from atoll.core.registry import load


class EmitterGroup(TyperGroup):
    """A command group whose sub-commands are the registered emitters, imported on first use."""

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(load().names(Kind.EMITTER)))

    def get_command(self, ctx: Any, name: str) -> Any:
        record = load().find(Kind.EMITTER, name)
        if record is not None:
            return plugin_command(record)
        return super().get_command(ctx, name)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            known = ", ".join(load().names(Kind.EMITTER)) or "(none installed)"
            ctx.fail(f"unknown emitter {name!r}; known emitters: {known}")
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=EmitterGroup,
    help="Run a task emitter: it synthesizes Harbor tasks (see the list below).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _group(ctx: typer.Context) -> Any:
    """Run a task emitter: it synthesizes Harbor tasks (see the list below)."""
