"""`atoll pi install | image build | run`: the pinned Pi, the rollout image, one rollout by hand.

Bad input and missing prerequisites are one error line and exit status 2;
a rollout that ended in an infrastructure error exits 1 (its record is kept).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from atoll.core import entry_points
from atoll.core.termination import interrupted_status, sigterm_unwinds

app = typer.Typer(
    help="The Pi coding agent: its pinned install, the rollout image, and single rollouts.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
image_app = typer.Typer(
    help="The rollout image (Python 3 and Node.js; no Julia).", no_args_is_help=True
)
app.add_typer(image_app, name="image")

# Sub-groups other distributions add to `atoll pi` (atoll-pi-train: `train`, `bootstrap`),
# by the entry-point group `atoll_pi_commands` (name -> a Typer app): this distribution
# names none of them.
COMMANDS_GROUP = "atoll_pi_commands"
for _name, _entry_point in sorted(entry_points.named(COMMANDS_GROUP).items()):
    app.add_typer(entry_points.load(COMMANDS_GROUP, _entry_point), name=_name)

_err = Console(stderr=True, highlight=False, soft_wrap=True)
_out = Console(highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> None:
    _err.print(f"[bold red]error:[/bold red] {message}")
    raise typer.Exit(code)


@app.callback()
def _group() -> None:
    """The Pi coding agent: its pinned install, the rollout image, and single rollouts."""


@app.command("install")
def install_cmd() -> None:
    """Install the pinned Pi (npm, into atoll's cache) unless it is there."""
    from atoll.pi import install

    try:
        pi = install.ensure(lambda line: _err.print(line))
    except install.PiUnavailable as exc:
        _fail(str(exc))
    _out.print(
        f"Pi {pi.version} at {pi.root} (Node.js {pi.node.version}, lock {pi.lock_sha256[:12]})"
    )


@image_app.command("build")
def image_build(
    mirror: str | None = typer.Option(
        None, "--mirror", help="Debian mirror for Node.js \\[default: the base image's]."
    ),
    force: bool = typer.Option(False, "--force", help="Rebuild even if the image is current."),
) -> None:
    """Build the rollout image from atoll/base:bookworm unless the current one is there."""
    from atoll.pi import container, image

    try:
        client = container.connect()
        built = image.ensure(client, lambda line: _err.print(line), mirror=mirror, force=force)
    except container.ContainerError as exc:
        _fail(str(exc))
    runtimes = ", ".join(f"{image.NAMES[k]} {v}" for k, v in sorted(built.runtimes.items()))
    lacks = ", ".join(image.NAMES.get(k, k) for k in built.lacks) or "nothing"
    state = "built" if built.source == "built" else "already current"
    _out.print(f"{built.tag} {built.image_id} ({state}): {runtimes}; lacks {lacks}")


@app.command("run")
def run_cmd(
    prompt: str | None = typer.Option(None, "--prompt", "-p", help="The prompt."),
    prompt_file: Path | None = typer.Option(
        None, "--prompt-file", help="Read the prompt from FILE."
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="The rollout's directory (must hold no record)."
    ),
    language: str | None = typer.Option(
        None, "--language", "-l", help="python, javascript or julia (refused: not in the image)."
    ),
    files: list[str] = typer.Option(
        [], "--file", "-f", help="NAME=PATH: copy PATH into the workspace as NAME (repeatable)."
    ),
    settings_kv: list[str] = typer.Option(
        [], "--ak", help="A setting KEY=VALUE, as for the Harbor agent (base_url, model, ...)."
    ),
    image_ref: str | None = typer.Option(
        None, "--image", help="Image tag or ID \\[default: the rollout image]."
    ),
) -> None:
    """Run one rollout and print its summary; the record is OUT/record.json."""
    from atoll.pi import rollout, settings, workspace
    from atoll.pi.container import ContainerError
    from atoll.pi.install import PiUnavailable

    if (prompt is None) == (prompt_file is None):
        _fail("give the prompt with exactly one of --prompt and --prompt-file")
    text = prompt if prompt is not None else _read(prompt_file)
    try:
        values = dict(_pair(item, "--ak") for item in settings_kv)
        chosen = settings.from_kwargs(values)
        sources = {name: Path(path) for name, path in (_pair(f, "--file") for f in files)}
        request = rollout.RolloutRequest(
            prompt=text,
            settings=chosen,
            run_dir=out,
            language=language,
            files=sources,
            image=image_ref or rollout.DEFAULT_IMAGE,
        )
        # SIGTERM unwinds like Ctrl-C, so the rollout's container and workspace are removed.
        with sigterm_unwinds(interrupt=True):
            record = rollout.run(request, say=lambda line: _err.print(line))
    except KeyboardInterrupt as exc:  # Ctrl-C exits 130, SIGTERM 143
        kept = out / "workspace"
        copied = f"; its files are in {escape(str(kept))}" if kept.is_dir() else ""
        _fail(f"interrupted: no container left, no record written{copied}", interrupted_status(exc))
    except (
        settings.SettingsError,
        rollout.RolloutRefused,
        workspace.WorkspaceError,
        ContainerError,
        PiUnavailable,
    ) as exc:
        _fail(str(exc))
    _summary(record)
    if record.outcome == "error":
        raise typer.Exit(1)


def _read(path: Path | None) -> str:
    assert path is not None
    try:
        return path.read_text("utf-8")
    except OSError as exc:
        _fail(f"cannot read the prompt file {path}: {exc.strerror}")
        raise AssertionError("unreachable") from exc


def _pair(item: str, option: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        _fail(f"{option} takes KEY=VALUE, got {item!r}")
    return key, value


def _summary(record: Any) -> None:
    table = Table(title=f"rollout {record.rollout_id}", show_header=False)
    container = record.container or {}
    cleanup = container.get("cleanup") or {}
    rows = [
        ("outcome", record.outcome + (f" ({record.error})" if record.error else "")),
        ("stop reason", str(record.stop_reason)),
        ("limit", str(record.limit or "-")),
        (
            "turns / tool calls / commands",
            f"{record.turns} / {len(record.tool_calls)} / {len(record.commands)}",
        ),
        (
            "tokens in / out",
            f"{record.usage.get('input_tokens')} / {record.usage.get('output_tokens')}",
        ),
        (
            "path audit",
            "disqualified: " + ", ".join(h["text"] for h in record.audit.hits)
            if record.audit.disqualified
            else "clean",
        ),
        (
            "image",
            f"{container.get('image_id')} (lacks {', '.join(container.get('lacks') or []) or 'nothing'})",
        ),
        ("container", f"{(container.get('id') or '-')[:12]} {cleanup.get('outcome', '-')}"),
        ("total", f"{record.timings.get('total_s', 0):.2f} s"),
        ("final text", record.final_text[-300:]),
    ]
    for name, value in rows:
        table.add_row(name, value)
    _out.print(table)
