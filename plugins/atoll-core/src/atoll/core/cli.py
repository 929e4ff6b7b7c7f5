"""The `atoll` command: Harbor's own Typer application plus what Harbor lacks.

Every Harbor command and flag keeps working. On top of it: short names for
agents, environments, verifiers and tasks on `run` (see `atoll.core.names`),
defaults for the job plugins and the environment (`atoll.core.run_defaults`),
and sub-commands contributed by plugins, imported only when invoked.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from atoll.core.entry_points import EntryPointError
from atoll.core.harbor_commands import harbor_command_names
from atoll.core.records import Kind, Registration
from atoll.core.registry import Registry, RegistryError, TaskSourceError, UnknownName, load
from atoll.core.scoring import ScorerNotInstalled
from atoll.core.targets import TargetError, import_target

# LiteLLM (which Harbor loads) fetches a model cost map from the internet at
# import unless told to use the copy it ships; a run must not reach outside.
LOCAL_ONLY_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


class _PluginCommandGroup(TyperGroup):
    """Harbor's command group with plugin commands loaded on first use."""

    registry: Registry

    def list_commands(self, ctx: Any) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(self.registry.names(Kind.COMMAND))
        return sorted(names)

    def get_command(self, ctx: Any, name: str) -> Any:
        record = self.registry.find(Kind.COMMAND, name)
        if record is not None:
            return plugin_command(record)
        return super().get_command(ctx, name)


def plugin_command(record: Registration) -> Any:
    """The command behind a command record, whose target is a Typer app."""
    target = import_target(record.target)
    if not isinstance(target, typer.Typer):
        raise RegistryError(
            f"{record.distribution}: command {record.name!r} targets {record.target}, "
            "which is not a Typer app"
        )
    command = typer.main.get_command(target)
    command.name = record.name
    if not command.help:
        command.help = record.summary
    if record.extends_harbor:
        command = _over_harbors(command)
    return command


def _over_harbors(command: Any) -> Any:
    """Harbor's command group of the same name, with the plugin's sub-commands added on top.

    Everything Harbor's group does keeps working (`atoll task init` is Harbor's);
    a plugin sub-command of the same name as one of Harbor's replaces it.
    Harbor's command line (over a second to import) is only loaded when a
    sub-command the plugin lacks is asked for or the group's commands are listed.
    """
    if not isinstance(command, TyperGroup):
        return command
    return TyperGroup(
        name=command.name,
        commands=_OverHarborCommands(command.commands, command.name),  # type: ignore[arg-type]
        callback=command.callback,
        params=command.params,
        help=command.help,
        no_args_is_help=True,
        context_settings=command.context_settings,
        # Harbor's groups keep Typer's default markup mode, as plugin apps do.
        rich_markup_mode=command.rich_markup_mode,
    )


class _OverHarborCommands(MutableMapping[str, Any]):
    """A plugin group's sub-commands over Harbor's group `name`: the plugin's own first.

    Harbor's sub-commands are loaded on the first lookup the plugin cannot
    answer; iteration yields Harbor's order with the plugin's additions after.
    """

    def __init__(self, own: Mapping[str, Any], name: str | None) -> None:
        self._own = dict(own)
        self._name = name
        self._merged: dict[str, Any] | None = None

    def _all(self) -> dict[str, Any]:
        if self._merged is None:
            from harbor.cli.main import app as harbor_app

            harbor = typer.main.get_command(harbor_app)
            harbors = (
                harbor.commands.get(self._name)
                if isinstance(harbor, TyperGroup) and self._name
                else None
            )
            theirs = harbors.commands if isinstance(harbors, TyperGroup) else {}
            self._merged = {**theirs, **self._own}
        return self._merged

    def __getitem__(self, name: str) -> Any:
        if name in self._own:
            return self._own[name]
        return self._all()[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._own[name] = command
        if self._merged is not None:
            self._merged[name] = command

    def __delitem__(self, name: str) -> None:
        self._own.pop(name, None)
        del self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def build(registry: Registry) -> TyperGroup:
    """The full `atoll` click group: Harbor's app with plugin commands on top."""
    from harbor.cli.main import app as harbor_app

    harbor = typer.main.get_command(harbor_app)
    if not isinstance(harbor, TyperGroup):
        raise RegistryError("Harbor's command line is not a Typer group; is Harbor 0.20 installed?")
    group = _PluginCommandGroup(
        name="atoll",
        commands=dict(harbor.commands),
        callback=harbor.callback,
        params=harbor.params,
        help=(
            "atoll: test-time training and evaluation of coding agents, on Harbor. "
            "Every Harbor command works here; `atoll plugins list` shows what atoll adds."
        ),
        no_args_is_help=True,
        context_settings=harbor.context_settings,
        rich_markup_mode=getattr(harbor, "rich_markup_mode", None),
    )
    group.registry = registry
    return group


def _fail(message: str, code: int = 2) -> int:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"[bold red]error:[/bold red] {escape(message)}"
    )
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `atoll` command."""
    from atoll.core import names, run_defaults

    for name, value in LOCAL_ONLY_ENV.items():
        os.environ.setdefault(name, value)  # set before Harbor imports LiteLLM; a user may override
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        registry = load()
        registry.check_command_names(harbor_command_names())
        if names.is_run_command(args):
            args = names.resolve(args, registry)
            args, notes = run_defaults.apply(args, registry)
            for note in notes:
                print(note, file=sys.stderr)
        first = next((a for a in args if not a.startswith("-")), None)
        record = registry.find(Kind.COMMAND, first) if first else None
        if record is not None and args and args[0] == first:
            command = plugin_command(record)
            return _invoke(command, args[1:], prog=f"atoll {first}")
        watch = None
        if run_defaults.is_job_command(args):
            from atoll.core import job_outcome  # YAML; only a job reads its config

            watch = job_outcome.JobWatch(args)
        code = _invoke(build(registry), args, prog="atoll")
        if code == 0 and watch is not None:
            for failed in watch.failures():
                code = _fail(failed.line(), code=1)
        return code
    except (
        UnknownName,
        names.UsageError,
        RegistryError,
        TargetError,
        TaskSourceError,
        ScorerNotInstalled,
        EntryPointError,
    ) as exc:
        return _fail(str(exc))


def _invoke(command: Any, args: list[str], prog: str) -> int:
    try:
        command.main(args=args, prog_name=prog, standalone_mode=True)
    except SystemExit as exit_:
        code = exit_.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
