"""Functional gate v2: did the trajectory compute the answer with a program it wrote and ran?

The gate reads the bridge's own record of what the container did (each file
written, each command with its exit code and stdout), never Pi's narration of
it. A trajectory qualifies when all five conditions hold:

- `program_written`: a program file for the assigned language was written or
  edited through the write/edit tools, at a relative path inside the workspace;
- `file_executed`: that same file was run with the assigned runtime in the
  plain form `python3 FILE` / `node FILE` (inline code, pipelines, chains,
  program arguments and other files are classified and do not count), after
  it was written, with no shell command rewriting it in between;
- `exit_zero`: that run exited 0 (output of a failing command never counts);
- `final_line_matches`: its last non-empty stdout line is the expected value
  (exact, after trimming whitespace and thousands separators);
- `answer_stated`: the final response states the value.

Boxed answers and `FINAL_ANSWER:` lines are recorded as presentation
diagnostics only. A file may still print a constant: the gate checks that a
program computed and printed the value, not that the program is general.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from atoll.euler import answers
from atoll.euler.executions import Execution, parse
from atoll.euler.runtimes import RUNTIMES

CONDITIONS = (
    "program_written",
    "file_executed",
    "exit_zero",
    "final_line_matches",
    "answer_stated",
)
WRITE_TOOLS = ("write", "edit")
# Commands that only look at a file; any other command naming the program file
# between its last tool write and its run may have rewritten it.
_VIEWERS = {
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "wc",
    "ls",
    "grep",
    "diff",
    "file",
    "stat",
    "sha256sum",
    "md5sum",
    "nl",
    "od",
    "xxd",
    "hexdump",
}


@dataclass(frozen=True)
class Operation:
    """One operation of the bridge's record, in the order the bridge carried them out."""

    seq: int
    op: str  # "bash", "read", "write", ...
    call_id: str = ""
    path: str | None = None  # read/write: the path the bridge touched
    command: str | None = None  # bash
    cwd: str | None = None
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None  # the operation failed (a file the container refused)
    timed_out: bool = False


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model made it: the name and the arguments it gave."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GateInput:
    """What the gate reads of one rollout."""

    workdir: str
    operations: tuple[Operation, ...]
    tool_calls: dict[str, ToolCall]
    final_text: str


@dataclass
class GateResult:
    passed: bool
    conditions: dict[str, bool]
    failed: list[str]
    details: dict[str, str]
    program: str | None  # the workspace-relative file that qualified or came closest
    execution_seq: int | None  # the bridge operation of the deciding run
    printed: str | None  # its final non-empty stdout line
    rejected_executions: list[dict[str, Any]]
    presentation: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "conditions": self.conditions,
            "failed": self.failed,
            "details": self.details,
            "program": self.program,
            "execution_seq": self.execution_seq,
            "printed": self.printed,
            "rejected_executions": self.rejected_executions,
            "presentation": self.presentation,
        }


@dataclass
class _Written:
    path: str  # absolute, normalized
    relative: str
    tool: str
    seqs: list[int]


def score(record: GateInput, expected: str, language: str) -> GateResult:
    """Gate one trajectory against `expected` for the assigned `language`."""
    runtime = RUNTIMES[language]
    workdir = posixpath.normpath(record.workdir)
    written = _written_programs(record, workdir, runtime.suffixes)
    conditions = dict.fromkeys(CONDITIONS, False)
    details: dict[str, str] = {}
    conditions["program_written"] = bool(written)
    if not written:
        details["program_written"] = (
            f"no {'/'.join(runtime.suffixes)} file was written or edited at a relative path "
            "with the write or edit tool"
        )

    rejected: list[dict[str, Any]] = []
    runs: list[tuple[Operation, Execution, _Written]] = []
    for op in record.operations:
        if op.op != "bash" or op.command is None:
            continue
        execution = parse(op.command, posixpath.normpath(op.cwd or workdir))
        if execution is None:
            continue
        reason = execution.reason
        target = written.get(execution.file or "")
        if reason is None and execution.language != language:
            reason = "wrong_runtime"
        if reason is None and target is None:
            reason = "other_file"
        if reason is None and target is not None and not any(s < op.seq for s in target.seqs):
            reason = "run_before_write"
        if reason is None and target is not None and _rewritten(record, target, op, workdir):
            reason = "file_changed_outside_tools"
        if reason is not None:
            rejected.append({"seq": op.seq, "command": op.command, "reason": reason})
            continue
        assert target is not None
        runs.append((op, execution, target))

    if written and not runs:
        details["file_executed"] = (
            f"no command ran a written program as `{runtime.command} FILE`"
            + (f" ({_reasons(rejected)})" if rejected else "")
        )
    conditions["file_executed"] = bool(runs)

    deciding = _deciding(runs, expected)
    printed: str | None = None
    program: str | None = None
    seq: int | None = None
    if deciding is not None:
        op, _, target = deciding
        program, seq = target.relative, op.seq
        printed = answers.final_nonempty_line(op.stdout)
        conditions["exit_zero"] = op.exit_code == 0
        if not conditions["exit_zero"]:
            status = "timed out" if op.timed_out else f"exited {op.exit_code}"
            details["exit_zero"] = f"`{op.command}` {status}"
        conditions["final_line_matches"] = answers.equals(printed, expected)
        if not conditions["final_line_matches"]:
            shown = "nothing" if printed is None else repr(printed.strip()[:80])
            details["final_line_matches"] = f"its last non-empty output line is {shown}"
        if not conditions["exit_zero"]:
            conditions["final_line_matches"] = False
    else:
        program = next(iter(written.values())).relative if written else None

    conditions["answer_stated"] = answers.stated_in(record.final_text, expected)
    if not conditions["answer_stated"]:
        details["answer_stated"] = "the final response does not state the expected value"
    failed = [name for name in CONDITIONS if not conditions[name]]
    for name in failed:
        details.setdefault(name, _DEFAULT_DETAIL[name])
    return GateResult(
        passed=not failed,
        conditions=conditions,
        failed=failed,
        details={k: details[k] for k in failed},
        program=program,
        execution_seq=seq,
        printed=printed,
        rejected_executions=rejected,
        presentation=answers.presentation(record.final_text, expected),
    )


_DEFAULT_DETAIL = {
    "program_written": "no program file was written",
    "file_executed": "no written program was run",
    "exit_zero": "no qualifying run",
    "final_line_matches": "no qualifying run printed anything",
    "answer_stated": "the final response does not state the expected value",
}


def _written_programs(
    record: GateInput, workdir: str, suffixes: tuple[str, ...]
) -> dict[str, _Written]:
    """Program files the write/edit tools wrote successfully, at relative paths in the workspace."""
    found: dict[str, _Written] = {}
    for op in record.operations:
        if op.op != "write" or op.error is not None or not op.path:
            continue
        call = record.tool_calls.get(op.call_id)
        if call is None or call.name not in WRITE_TOOLS:
            continue
        argument = str(call.arguments.get("path") or call.arguments.get("file_path") or "")
        if not _is_relative(argument):
            continue
        path = posixpath.normpath(posixpath.join(workdir, op.path))
        if not (path.startswith(workdir.rstrip("/") + "/") and path.endswith(suffixes)):
            continue
        entry = found.setdefault(
            path, _Written(path, posixpath.relpath(path, workdir), call.name, [])
        )
        entry.seqs.append(op.seq)
    return found


def _is_relative(argument: str) -> bool:
    if not argument or argument.startswith(("/", "~", "$HOME", "${HOME}")):
        return False
    return ".." not in argument.replace("\\", "/").split("/")


def _rewritten(record: GateInput, target: _Written, run: Operation, workdir: str) -> bool:
    """Whether a shell command between the file's last tool write and `run` may have changed it."""
    last_write = max((s for s in target.seqs if s < run.seq), default=None)
    if last_write is None:
        return False
    names = sorted({target.relative, posixpath.basename(target.path), target.path}, key=len)
    mention = re.compile(
        r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in reversed(names)) + r")(?![\w/-])"
    )
    for op in record.operations:
        if op.op != "bash" or not (last_write < op.seq < run.seq) or not op.command:
            continue
        named = mention.search(op.command) or _glob_names(op.command, target, op.cwd or workdir)
        if named and not _only_views(op, target, workdir):
            return True
    return False


def _glob_names(command: str, target: _Written, cwd: str) -> bool:
    """Whether a shell glob or brace pattern of the command (`*.py`, `sol?tion.py`,
    `{a,solution}.py`) matches the file, or a `find` over the workspace may act on it
    (`-exec`, `-delete` with no `-name` that leaves it out)."""
    words = _words(command)
    relative = posixpath.relpath(target.path, posixpath.normpath(cwd))
    names = {relative, "./" + relative}
    for word in words:
        expanded = _braces(word)
        for pattern in expanded:
            globbed = any(c in pattern for c in "*?[")
            if (globbed or len(expanded) > 1) and any(
                fnmatch.fnmatchcase(n, pattern) for n in names
            ):
                return True
    if "find" not in words or not any(w in ("-exec", "-execdir", "-delete", "-ok") for w in words):
        return False
    patterns = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-name", "-iname")]
    base = posixpath.basename(target.path)
    return not patterns or any(fnmatch.fnmatch(base, p) for p in patterns)


def _words(command: str) -> list[str]:
    """The command's shell words, operators (`;`, `|`, `&&`) split off."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


def _braces(word: str) -> list[str]:
    """A word with its first `{a,b}` brace group expanded (recursively), as bash does."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if match is None:
        return [word]
    expanded = []
    for choice in match.group(1).split(","):
        expanded += _braces(word[: match.start()] + choice + word[match.end() :])
    return expanded


def _only_views(op: Operation, target: _Written, workdir: str) -> bool:
    """A command that merely looks at the file or runs it (no redirection into it)."""
    command = op.command or ""
    cwd = posixpath.normpath(op.cwd or workdir)
    for match in _REDIRECT.finditer(command):
        if posixpath.normpath(posixpath.join(cwd, match.group(1))) == target.path:
            return False
    words = command.split()
    if len(words) >= 3 and words[0] == "cp" and not any(c in command for c in "|;&"):
        destination = posixpath.normpath(posixpath.join(cwd, words[-1]))
        return destination not in (target.path, posixpath.dirname(target.path))
    if words and words[0] in _VIEWERS:
        return "-i" not in words and not any(c in command for c in "|;&")
    execution = parse(command, cwd)
    return execution is not None and execution.reason is None


_REDIRECT = re.compile(r"\d?>>?\s*['\"]?([^\s'\";&|<>]+)")


def _deciding(
    runs: list[tuple[Operation, Execution, _Written]], expected: str
) -> tuple[Operation, Execution, _Written] | None:
    """The last qualifying run that passed, else the last qualifying run."""
    for run in reversed(runs):
        op = run[0]
        if op.exit_code == 0 and answers.equals(answers.final_nonempty_line(op.stdout), expected):
            return run
    return runs[-1] if runs else None


def _reasons(rejected: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for item in rejected:
        counts[item["reason"]] = counts.get(item["reason"], 0) + 1
    return ", ".join(f"{reason} x{n}" if n > 1 else reason for reason, n in counts.items())
