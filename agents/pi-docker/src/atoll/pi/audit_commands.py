"""What each word of a shell command is, for the path audit: path, data, program or script.

The tables of commands and options (grep's pattern, `cut -d`'s delimiter, `python3 -c`'s
program, `bash -c`'s script, test's file operands, the wrappers `timeout` and `env`) and
the roles they give a command's arguments. Both ways of reading a command line in
`audit_shell` (bashlex's tree and the shlex fallback) share them, so they live apart from
the parsing.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import Any

# Commands whose first operand (or each -e operand) is a pattern, not a file.
_PATTERN_COMMANDS = frozenset({"grep", "egrep", "fgrep", "rg", "zgrep"})
# Commands whose arguments are data: text they print, characters they translate, the
# operands and operators of arithmetic (`expr 10 / 3`, `let x=a/b`).
DATA_COMMANDS = frozenset({"echo", "printf", "tr", "expr", "let"})
# Commands whose operands are strings except after a file test (`[ -f x ]`, `a -nt b`).
_TEST_COMMANDS = frozenset({"test", "[", "[["})
_FILE_TESTS = frozenset(f"-{letter}" for letter in "abcdefgGhkLNOprsSuwx")
_FILE_COMPARISONS = frozenset({"-nt", "-ot", "-ef"})
# Options whose value is data (a delimiter, a pattern), not a file, by command.
_DATA_OPTIONS = {
    "cut": ("-d", "--delimiter"),
    "sort": ("-t", "--field-separator"),
    "join": ("-t",),
    "paste": ("-d", "--delimiters"),
    "column": ("-s", "-o", "--separator", "--output-separator"),
    "read": ("-d",),
    "awk": ("-F", "--field-separator"),
    "gawk": ("-F", "--field-separator"),
    "mawk": ("-F",),
    "grep": ("-e", "--regexp"),
    "egrep": ("-e", "--regexp"),
    "fgrep": ("-e", "--regexp"),
    "zgrep": ("-e", "--regexp"),
    "rg": ("-e", "--regexp"),
    "sed": ("-e", "--expression"),
    "perl": ("-F",),
    "ruby": ("-F",),
    "dc": ("-e", "--expression"),
}
# Options whose value is a file the command reads as its pattern list or program.
_FILE_OPTIONS = ("-f", "--file")
# Assignments whose value is data (the field separator), not a list of paths.
DATA_VARIABLES = frozenset({"IFS"})
# Commands whose first operand (or the operand of the named flags) is a program in another
# language: audited as program text.
_PROGRAM_FLAGS = {
    "python": ("-c",),
    "python3": ("-c",),
    "node": ("-e", "--eval", "-p", "--print"),
    "julia": ("-e", "-E", "--eval"),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
}
_SCRIPT_COMMANDS = frozenset({"awk", "gawk", "mawk", "sed"})
SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
_FIND_DATA_TESTS = frozenset(
    {"-name", "-iname", "-regex", "-iregex", "-path", "-ipath", "-wholename", "-lname", "-printf"}
)
# Interpreters whose one-letter flags cluster (`perl -lne`, `ruby -ne`): a cluster that ends
# in the program flag's letter takes the program as its next word.
_CLUSTERING = frozenset({"python", "python3", "node", "perl", "ruby"})
WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "env", "command", "exec", "xargs"})


def unwrapped(words: list[Any]) -> list[Any]:
    """The wrapper words of a command (`timeout`, `env`, ...) then, last, its first own word."""
    out = []
    index = 0
    while index < len(words) and words[index].word in WRAPPERS:
        out.append(words[index])
        index += 1
        while index < len(words) and (
            words[index].word.startswith("-")
            or re.match(r"^[\d.]+[smh]?$|^\w+=", words[index].word)
        ):
            index += 1
    return out + words[index : index + 1]


def command_words(words: list[Any]) -> list[Any]:
    """The words of a command from its own name on (wrappers and their options left out)."""
    wrapped = unwrapped(words)
    if not wrapped or wrapped[-1].word in WRAPPERS:
        return []
    return words[words.index(wrapped[-1]) :]


def reads_script(words: list[Any]) -> bool:
    """Whether a command is a shell reading its script from standard input."""
    args = [w.word for w in words[1:]]
    return posixpath.basename(words[0].word) in SHELLS and all(
        a.startswith("-") and a != "-c" for a in args
    )


def option_value(name: str, arg: str) -> str | None:
    """The value attached to an option word (`--input=/x`, `-o/x`), None when it has none
    or when the option's value is data (`-d/`, `-F/`)."""
    data = _DATA_OPTIONS.get(name, ())
    key, sep, value = arg.partition("=")
    if sep:
        return None if key in data else value
    if arg.startswith("--"):
        return None
    match = re.match(r"^(-[A-Za-z0-9]+?)([/~.$].*|file:.*)$", arg)
    if match is None or match.group(1) in data:
        return None
    return match.group(2)


def roles(name: str, args: list[str]) -> Iterator[tuple[int, str]]:
    """(index, role) for each argument: "path", "option" (a value attached to an option
    word), "program", "shell", or nothing for data."""
    if name in DATA_COMMANDS:
        return
    if name in _TEST_COMMANDS:
        yield from _test_roles(args)
        return
    if name == "eval":
        yield from ((i, "shell") for i in range(len(args)))
        return
    explicit = False
    operands = 0
    skip_next: str | None = None
    for index, arg in enumerate(args):
        if skip_next is not None:
            role = skip_next
            skip_next = None
            if role:
                yield index, role
            continue
        if name in SHELLS and arg == "-c":
            skip_next = "shell"
            continue
        if name in _PROGRAM_FLAGS and _is_program_flag(name, arg):
            skip_next = "program"
            continue
        if name in _PATTERN_COMMANDS and arg in ("-e", "--regexp"):
            skip_next, explicit = "", True
            continue
        if name in _SCRIPT_COMMANDS and arg in ("-e", "--expression"):
            skip_next, explicit = "program", True
            continue
        if name in _SCRIPT_COMMANDS and arg in ("-v",):
            skip_next = ""
            continue
        if (name in _PATTERN_COMMANDS or name in _SCRIPT_COMMANDS) and arg in _FILE_OPTIONS:
            skip_next, explicit = "path", True  # the pattern list or program read from a file
            continue
        if arg in _DATA_OPTIONS.get(name, ()):
            skip_next = ""
            continue
        if name == "find" and arg in _FIND_DATA_TESTS:
            skip_next = ""
            continue
        if arg.startswith("-") and arg != "-":
            if option_value(name, arg) is not None:
                yield index, "option"
            continue
        if operands == 0 and not explicit and name in _PATTERN_COMMANDS:
            operands += 1
            continue
        if operands == 0 and not explicit and name in _SCRIPT_COMMANDS:
            operands += 1
            yield index, "program"
            continue
        operands += 1
        yield index, "path"


def _is_program_flag(name: str, arg: str) -> bool:
    """Whether `arg` is the flag before an interpreter's program (`-c`, `-e`, `-lne`)."""
    flags = _PROGRAM_FLAGS[name]
    if arg in flags:
        return True
    letters = {flag[1] for flag in flags if len(flag) == 2}
    return (
        name in _CLUSTERING and re.fullmatch(r"-[A-Za-z]+", arg) is not None and arg[-1] in letters
    )


def _test_roles(args: list[str]) -> Iterator[tuple[int, str]]:
    """The path operands of test, `[` and `[[`: the operand of a file test (`-f x`) and both
    sides of a file comparison (`a -nt b`); the rest are strings (`[ "$a" = / ]`)."""
    paths = set()
    for index, arg in enumerate(args):
        if arg in _FILE_TESTS and index + 1 < len(args):
            paths.add(index + 1)
        elif arg in _FILE_COMPARISONS:
            paths.update(i for i in (index - 1, index + 1) if 0 <= i < len(args))
    yield from ((index, "path") for index in sorted(paths))
