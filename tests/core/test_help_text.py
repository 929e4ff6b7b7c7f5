"""Every bracketed note in an option's help reaches the user's screen.

Typer renders help with Rich markup, where `[default: a free one]` reads as a
style tag and vanishes without a word ("Port on 127.0.0.1 ."). Each plugin
command's help is rendered here as a user sees it, and every `[...]` of every
option's help must be in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from atoll.core.cli import plugin_command
from atoll.core.registry import Kind, load

BOX = re.compile(r"[│╭╮╰╯─┃━┏┓┗┛]")
NOTE = re.compile(r"\[[^\[\]]+\]")


def flat(text: str) -> str:
    """The text without Rich's borders and line breaks: wrapped words meet again."""
    return " ".join(BOX.sub(" ", text).split())


def commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    if hasattr(command, "commands"):  # a group (Typer's own click, not the click package)
        # A group over one of Harbor's: its own sub-commands only (Harbor's help is Harbor's).
        for name in sorted(getattr(command.commands, "_own", command.commands)):
            yield from commands(command.commands[name], (*path, name))


def plugin_commands() -> list[tuple[Any, tuple[str, ...], Any]]:
    """(the plugin's root command, the path below it, the command) for every command."""
    found = []
    for record in load().all():
        if record.kind is Kind.COMMAND:
            root = plugin_command(record)
            found.extend((root, path, command) for path, command in commands(root, ()))
    return found


def notes(command: Any) -> list[str]:
    """The bracketed notes of the command's option help, as the author wrote them."""
    found = []
    for param in command.params:
        help_text = getattr(param, "help", None) or ""
        found.extend(flat(note) for note in NOTE.findall(help_text.replace("\\[", "[")))
    return found


@pytest.mark.parametrize(
    ("root", "path", "command"),
    [
        pytest.param(root, path, command, id=" ".join((root.name, *path)))
        for root, path, command in plugin_commands()
        if notes(command)
    ],
)
def test_every_bracketed_note_of_an_options_help_is_shown(
    root: Any,
    path: tuple[str, ...],
    command: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as exited:
        root.main([*path, "--help"], prog_name=f"atoll {root.name}")
    shown = capsys.readouterr().out
    assert exited.value.code == 0, shown
    screen = flat(shown)
    missing = [note for note in notes(command) if note not in screen]
    assert not missing, f"the help of {' '.join(path)} lost {missing}:\n{shown}"
