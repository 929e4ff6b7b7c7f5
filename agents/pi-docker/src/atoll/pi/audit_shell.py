"""Shell-line parsing for the path audit: the path words of a bash command.

The command is parsed as bash parses it (bashlex), or by shlex's words for the forms
bashlex lacks; here-docs and arithmetic are taken out first, and a here-doc, here-string,
`bash -c` or `eval` string is audited as a command or as program text
(`audit_programs`). Which argument of a command is a path word is `audit_commands`'s.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import Any

import bashlex  # type: ignore[import-untyped]

from atoll.pi.audit_commands import (
    DATA_COMMANDS,
    DATA_VARIABLES,
    SHELLS,
    WRAPPERS,
    command_words,
    option_value,
    reads_script,
    roles,
    unwrapped,
)
from atoll.pi.audit_paths import path_hits
from atoll.pi.audit_programs import content_hits

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_GLOB = re.compile(r"[*?\[]")


def command_hits(command: str) -> list[tuple[str, str]]:
    """(kind, text) for every path word of a bash command, in order (see the module's rule)."""
    line_text, bodies = _split_heredocs(command)
    shell, substituted = _blank_arithmetic(line_text)
    hits = list(_shell_hits(shell))
    for inner in substituted:
        hits += command_hits(inner)
    for body, is_script in bodies:
        hits += command_hits(body) if is_script else content_hits(body)
    return hits


def _shell_hits(text: str) -> Iterator[tuple[str, str]]:
    try:
        trees = bashlex.parse(text)
    except Exception:  # bashlex lacks `case` and a few rarer forms: the same rule on shlex's words
        yield from _fallback_hits(text)
        return
    walker = _Walker(text)
    for tree in trees:
        walker.visit(tree)
    yield from walker.hits


class _Walker:
    """Walks bashlex's tree in source order, tracking `cd` so `..` is judged from where it is."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.hits: list[tuple[str, str]] = []
        self.depth = 0

    def visit(self, node: Any) -> None:
        kind = node.kind
        if kind == "command":
            self._command(node)
            return
        if kind == "redirect":
            self._redirect(node)
            return
        if kind in ("commandsubstitution", "processsubstitution"):
            self.visit(node.command)
            return
        if kind == "word":  # a loop's word list (`for f in /etc/*`)
            self._word(node)
            return
        if kind == "pipeline":
            self._piped_scripts(node)
        for attribute in ("parts", "list"):
            for child in getattr(node, attribute, None) or []:
                self.visit(child)
        for redirect in getattr(node, "redirects", None) or []:
            self.visit(redirect)

    def _redirect(self, node: Any, script: bool = False) -> None:
        """A redirection's target; a here-string (`<<<`) is text, read as a here-doc's body:
        a command when a shell reads it as its script, else program text."""
        target = node.output
        if not (hasattr(target, "kind") and target.kind == "word"):
            return
        if node.type != "<<<":
            self._word(target)
        elif script:
            self.hits += command_hits(target.word)
        else:
            self.hits += content_hits(target.word)
            self._substitutions(target)

    def _command(self, node: Any) -> None:
        words = [part for part in node.parts if part.kind == "word"]
        own = command_words(words)
        script = bool(own) and reads_script(own)
        for part in node.parts:
            if part.kind == "assignment":
                variable, _, value = part.word.partition("=")
                for piece in [] if variable in DATA_VARIABLES else value.split(":"):
                    self.hits += path_hits(piece, self.depth)
                self._substitutions(part)
            elif part.kind == "redirect":
                self._redirect(part, script)
        self._words(words)

    def _words(self, words: list[Any]) -> None:
        for word in unwrapped(words):  # `timeout 10 python3 x.py`: audit the wrapped command
            if word.word in WRAPPERS:
                self._word(word)
        words = command_words(words)
        if not words:
            return
        name = posixpath.basename(words[0].word)
        self._word(words[0])
        for word in words[1:]:
            self._substitutions(word)
        texts = [w.word for w in words[1:]]
        for index, role in roles(name, texts):
            word = words[1 + index]
            if role == "path":
                self._word(word, substitutions=False)
            elif role == "option":
                self.hits += path_hits(option_value(name, word.word) or "", self.depth)
            elif role == "program":
                self.hits += content_hits(word.word)
            elif role == "shell":
                self.hits += command_hits(word.word)
        if name in DATA_COMMANDS:  # `echo /etc/*`: an unquoted glob lists a directory
            for word in words[1:]:
                raw = self.source[word.pos[0] : word.pos[1]]
                if _GLOB.search(raw) and not re.search(r"['\"\\]", raw):
                    self.hits += path_hits(word.word, self.depth)
        if name == "cd":
            self._cd(texts)

    def _piped_scripts(self, node: Any) -> None:
        """`echo 'cat /etc/x' | sh`: what is printed into a shell is audited as a command."""
        commands = [part for part in node.parts if part.kind == "command"]
        for before, after in zip(commands, commands[1:], strict=False):
            printer = command_words([p for p in before.parts if p.kind == "word"])
            reader = command_words([p for p in after.parts if p.kind == "word"])
            if not printer or not reader or not reads_script(reader):
                continue
            if posixpath.basename(printer[0].word) in ("echo", "printf"):
                args = [w.word for w in printer[1:] if not w.word.startswith("-")]
                self.hits += command_hits(" ".join(args).replace("\\n", "\n"))

    def _cd(self, texts: list[str]) -> None:
        if not texts:
            self.hits.append(("home", "cd"))
            return
        target = texts[0]
        if target.startswith(("/", "~", "$")) or target == "-":
            return  # a hit already, or back where it was
        level = self.depth
        for part in target.split("/"):
            if part == "..":
                level -= 1
            elif part not in ("", "."):
                level += 1
        self.depth = max(level, 0)

    def _word(self, word: Any, substitutions: bool = True) -> None:
        text = word.word
        if text.startswith("--") and "=" in text:
            text = text.split("=", 1)[1]
        self.hits += path_hits(text, self.depth)
        if substitutions:
            self._substitutions(word)

    def _substitutions(self, word: Any) -> None:
        for part in getattr(word, "parts", None) or []:
            if part.kind in ("commandsubstitution", "processsubstitution"):
                self.visit(part.command)
            elif part.kind == "tilde" and not word.word.startswith("~"):
                self.hits.append(("home", word.word))


def _fallback_hits(text: str) -> Iterator[tuple[str, str]]:
    """The word rule over shlex's tokens, for the forms bashlex cannot parse."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # an unterminated quote: bash would refuse it too; words as they stand
        tokens = text.split()
    command: list[str] = []
    cases = 0  # `case ... esac` still open
    skip: str | None = None  # data being passed over, up to: "in", ")" or one "word"
    for token in [*tokens, ";"]:
        if skip == "word":  # a here-string: text fed to standard input
            skip = None
        elif skip is not None:  # a case's subject (up to `in`) or a pattern (up to `)`)
            if token == "esac":
                cases, skip = max(cases - 1, 0), None
            elif token == skip:
                skip = ")" if token == "in" else None
        elif command[:1] == ["[["] and "]]" not in command and token in ("&&", "||", "(", ")"):
            command.append(token)  # `[[ a && b ]]` is one command
        elif token and set(token) <= set(";&|()<>"):
            yield from _fallback_command(command)
            command = []
            if token == "<<<":
                skip = "word"
            elif cases and token in (";;", ";&", ";;&"):
                skip = ")"
        elif not command and token == "case":
            cases, skip = cases + 1, "in"
        elif not command and token == "esac":
            cases = max(cases - 1, 0)
        else:
            command.append(token)


def _fallback_command(words: list[str]) -> Iterator[tuple[str, str]]:
    while words and re.match(r"^\w+=", words[0]):
        variable, _, value = words[0].partition("=")
        for piece in [] if variable in DATA_VARIABLES else value.split(":"):
            yield from path_hits(piece)
        words = words[1:]
    if not words:
        return
    name = posixpath.basename(words[0])
    yield from path_hits(words[0])
    for index, role in roles(name, words[1:]):
        arg = words[1 + index]
        if role == "path":
            yield from path_hits(arg)
        elif role == "option":
            yield from path_hits(option_value(name, arg) or "")
        elif role == "program":
            yield from content_hits(arg)
        elif role == "shell":
            yield from command_hits(arg)


def _blank_arithmetic(text: str) -> tuple[str, list[str]]:
    """`$(( ... ))`, `(( ... ))` and `$[ ... ]` outside single quotes replaced by a
    same-length number, and the commands substituted inside them.

    Arithmetic names no file (bashlex cannot parse it either), but a command
    substituted in it runs (`$(( $(wc -l < f) / 2 ))`); a single-quoted `((` is
    data, an awk program's for one.
    """
    out = []
    inner: list[str] = []
    index = 0
    quote: str | None = None
    while index < len(text):
        char = text[index]
        if quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\":
            out.append(text[index : index + 2])
            index += 2
            continue
        elif char in "'\"" and quote is None:
            quote = char
        elif char == '"' and quote == '"':
            quote = None
        elif text.startswith(("$((", "$["), index) or (
            text.startswith("((", index) and quote is None
        ):
            opening = index + (1 if char == "$" else 0)
            end = _closing(text, opening, "[]" if text[opening] == "[" else "()")
            if end is not None:
                width = end + 1 - index
                inner += _substituted(text[index : end + 1])
                out.append("0" * width if char == "$" else ":" + " " * (width - 1))
                index = end + 1
                continue
        out.append(char)
        index += 1
    return "".join(out), inner


def _substituted(text: str) -> list[str]:
    """The commands of the `$( )` and backquote substitutions in a piece of arithmetic."""
    commands = re.findall(r"`([^`]*)`", text)
    for match in re.finditer(r"\$\((?!\()", text):
        end = _closing(text, match.end() - 1)
        if end is not None:
            commands.append(text[match.end() : end])
    return commands


def _closing(text: str, start: int, pair: str = "()") -> int | None:
    """The index of the bracket that closes the one at `start`, or None."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == pair[0]:
            depth += 1
        elif text[index] == pair[1]:
            depth -= 1
            if depth == 0:
                return index
    return None


def _split_heredocs(command: str) -> tuple[str, list[tuple[str, bool]]]:
    """The command lines (here-doc operators taken out) and each here-doc's body, with
    whether a shell reads it as its script (`bash <<EOF`, `cat <<EOF | sh`)."""
    lines: list[str] = []
    bodies: list[tuple[str, bool]] = []
    pending: list[tuple[str, bool, bool]] = []  # here-docs opened on this line
    body: list[str] = []
    for line in command.split("\n"):
        if pending:
            delimiter, strip_tabs, is_script = pending[0]
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                pending.pop(0)
                bodies.append(("\n".join(body), is_script))
                body = []
            else:
                body.append(line)
            continue
        for match in _HEREDOC.finditer(line):
            is_script = _feeds_a_shell(line[: match.start()], line[match.end() :])
            pending.append((match.group(2), match.group(0).startswith("<<-"), is_script))
        lines.append(_HEREDOC.sub(" ", line))
    if body:
        bodies.append(("\n".join(body), pending[0][2]))
    return "\n".join(lines), bodies


def _feeds_a_shell(before: str, after: str) -> bool:
    """Whether the here-doc between `before` and `after` on its line is a shell's script."""
    command = re.split(r"[|;&(]", before)[-1].split()
    while command and (command[0] in WRAPPERS or re.match(r"^\w+=", command[0])):
        command = command[1:]
    if not command:
        return False
    name = posixpath.basename(command[0])
    if name in SHELLS:
        return all(a.startswith("-") and a != "-c" for a in command[1:])
    piped = re.match(r"^[^|;&]*\|\s*(\S+)((?:\s+-\w+)*)\s*($|[;&|])", after)
    return name == "cat" and piped is not None and posixpath.basename(piped.group(1)) in SHELLS
