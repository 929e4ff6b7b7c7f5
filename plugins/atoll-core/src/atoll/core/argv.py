"""Reading Harbor's command line as Harbor's parser (click) reads it, for the flags atoll cares about.

`atoll` rewrites short names (`atoll.core.names`) and fills in defaults
(`atoll.core.run_defaults`, `atoll.core.job_outcome`) before Harbor parses the
command line, so each must find a flag's value where click would: `--flag V`,
`--flag=V`, `-f V` and `-fV`. Nothing after `--` is an option.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

END_OF_OPTIONS = "--"


@dataclass(frozen=True)
class Occurrence:
    """One flag with its value: `args[start:stop]` is `--flag V` (two words) or `--flag=V` (one).

    `value` is None for a flag that ends the command line without one.
    """

    flag: str
    value: str | None
    start: int
    stop: int


def occurrences(args: Sequence[str], flags: Sequence[str]) -> Iterator[Occurrence]:
    """Every use of one of `flags` (each `--long` or `-s`, taking a value), in order."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == END_OF_OPTIONS:
            return
        found = _match(arg, flags)
        if found is None:
            i += 1
            continue
        flag, inline = found
        if inline is not None:
            yield Occurrence(flag, inline, i, i + 1)
            i += 1
        elif i + 1 < len(args):
            yield Occurrence(flag, args[i + 1], i, i + 2)
            i += 2
        else:
            yield Occurrence(flag, None, i, i + 1)
            i += 1


def values(args: Sequence[str], flags: Sequence[str]) -> list[str]:
    """Every value given to any of `flags`, in order."""
    return [o.value for o in occurrences(args, flags) if o.value is not None]


def _match(arg: str, flags: Sequence[str]) -> tuple[str, str | None] | None:
    """The flag `arg` is, with its value when written into the same word."""
    for flag in flags:
        if arg == flag:
            return flag, None
        if flag.startswith("--"):
            if arg.startswith(flag + "="):
                return flag, arg[len(flag) + 1 :]
        elif len(flag) == 2 and arg.startswith(flag) and not arg.startswith("--"):
            return flag, arg[2:]  # click reads `-aX` as `-a X`
    return None


def starts_command(args: Sequence[str], commands: Sequence[tuple[str, ...]]) -> bool:
    """Whether the command line's leading words (options aside) are one of `commands`."""
    words = [a for a in args if not a.startswith("-")][:2]
    return any(tuple(words[: len(command)]) == command for command in commands)
