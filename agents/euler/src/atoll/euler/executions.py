"""Which bash commands ran a program file with a runtime, and how.

The gate trusts only a command of one plain form: the assigned interpreter,
harmless flags, one relative program file and nothing after it (optionally
behind `cd DIR &&`, `timeout N` or `time`, with stderr redirected). Anything
else that invokes an interpreter is classified with the reason it cannot
qualify: inline code (`python -c`, `node -e`/`-p`), a pipeline or a chain
that can change what was printed, program arguments (which can carry the
answer in), or another runtime.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from atoll.euler.runtimes import Runtime, runtime_for_interpreter

_OPERATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"}
_SHELL_CHARS = set("<>&|;()")
# Trailing redirections (as shlex splits them) that leave stdout as the program printed it.
_ALLOWED_TAILS = (("2", ">&", "1"), ("2", ">", "/dev/null"))
_WRAPPERS = {"time", "command", "exec", "nice"}


@dataclass(frozen=True)
class Execution:
    """One command that invoked an interpreter, as the gate classifies it."""

    interpreter: str
    language: str | None  # the runtime's language, None if not an interpreter we know
    file: str | None  # the program file resolved to an absolute container path
    file_argument: str | None  # as written in the command
    reason: str | None  # None: a plain execution of `file`; else why it cannot qualify


def parse(command: str, cwd: str) -> Execution | None:
    """The interpreter invocation in `command` run from `cwd`, or None if it runs none."""
    try:
        tokens = _tokens(command)
    except ValueError:
        return _any_interpreter(command, "unparsable_command")
    if tokens is None:
        return _any_interpreter(command, "compound_command")
    segments = _split(tokens, "&&")
    directory = cwd
    for segment in segments[:-1]:
        if len(segment) == 2 and segment[0] == "cd":
            directory = _resolve(directory, segment[1])
        else:
            return _any_interpreter(command, "compound_command")
    words = _strip_redirects(segments[-1])
    if words is None:
        return _any_interpreter(command, "compound_command")
    words = _strip_wrappers(words)
    if not words:
        return None
    runtime = runtime_for_interpreter(words[0])
    if runtime is None:
        reason = "environment_assignment" if _is_assignment(words[0]) else "indirect_execution"
        return _any_interpreter(" ".join(words[1:]), reason)
    return _classify(runtime, words, directory)


def _classify(runtime: Runtime, words: list[str], directory: str) -> Execution:
    index = 1
    while index < len(words):
        word = words[index]
        flag = word.split("=", 1)[0]
        if (
            word in runtime.inline_flags
            or flag in runtime.inline_flags
            or _inline_cluster(runtime, word)
        ):
            return Execution(words[0], runtime.language, None, None, "inline_flag")
        if word in runtime.plain_flags:
            index += 1
        elif flag in runtime.flags_with_argument:
            index += 1 if "=" in word else 2
        elif word.startswith("-") and word != "-":
            return Execution(words[0], runtime.language, None, None, "unknown_runtime_flag")
        else:
            break
    if index >= len(words):
        return Execution(words[0], runtime.language, None, None, "no_program_file")
    argument = words[index]
    file = _resolve(directory, argument)
    if index + 1 < len(words):
        return Execution(words[0], runtime.language, file, argument, "program_arguments")
    if not file.endswith(runtime.suffixes):
        return Execution(words[0], runtime.language, file, argument, "not_a_program_file")
    return Execution(words[0], runtime.language, file, argument, None)


def _inline_cluster(runtime: Runtime, word: str) -> bool:
    """`-uc` or `-Bc` style clusters that end in an inline flag (python's short options)."""
    if not word.startswith("-") or word.startswith("--") or len(word) < 3:
        return False
    return any(f"-{letter}" in runtime.inline_flags for letter in word[1:])


def _tokens(command: str) -> list[str] | None:
    """Shell words and operators; None for multi-line scripts, substitutions and heredocs."""
    if "\n" in command.strip() or "$(" in command or "`" in command or "<<" in command:
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _split(tokens: list[str], operator: str) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token == operator:
            segments.append([])
        else:
            segments[-1].append(token)
    return segments


def _strip_redirects(words: list[str]) -> list[str] | None:
    """The words without an allowed trailing stderr redirection; None if anything else remains."""
    for tail in _ALLOWED_TAILS:
        if len(words) > len(tail) and words[-len(tail) :] == list(tail):
            words = words[: -len(tail)]
            break
    if any(w in _OPERATORS or set(w) <= _SHELL_CHARS for w in words):
        return None
    return words


def _strip_wrappers(words: list[str]) -> list[str]:
    """`timeout 60 python3 f.py` and `time python3 f.py` run `python3 f.py`."""
    while words:
        if words[0] in _WRAPPERS:
            words = words[1:]
        elif words[0] == "timeout":
            rest = words[1:]
            while rest and rest[0].startswith("-"):
                takes_value = rest[0] in ("-s", "--signal", "-k", "--kill-after")
                rest = rest[2:] if takes_value else rest[1:]
            words = rest[1:]
        else:
            break
    return words


def _is_assignment(word: str) -> bool:
    name, sep, _ = word.partition("=")
    return bool(sep) and name.isidentifier()


def _any_interpreter(command: str, reason: str) -> Execution | None:
    """A command we do not accept as a plain run: an Execution only if it mentions an interpreter."""
    for word in re.findall(r"[A-Za-z0-9_./+-]+", command):
        runtime = runtime_for_interpreter(word)
        if runtime is not None:
            return Execution(word, runtime.language, None, None, reason)
    return None


def _resolve(directory: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(directory, path))
