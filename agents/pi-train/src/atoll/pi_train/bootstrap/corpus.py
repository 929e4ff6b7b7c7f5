"""The tool-protocol corpus: conversations that use Pi's read, write, edit and bash.

Every conversation is a small file task in a workspace (integers in
`values.txt`, a service log), solved the way the Pi evaluation wants it: a
program written at a relative path, run in the plain form, its printed value
stated in the final reply. The families teach one behaviour each:

| family | teaches |
|---|---|
| `write-run` | read the data, write a program, run it, state what it printed |
| `log-count` | look with a shell command first (grep's exit 1 for "none"), then count with a program |
| `fix-name-error` | a program that crashes: read the traceback, read the file, edit, rerun |
| `fix-missing-file` | a failed run (no such file): look at the workspace, fix the name, rerun |
| `edit-retry` | an edit whose old text does not match: read the file, edit again exactly |

Every conversation is one the evaluation would pass: atoll-euler's functional
gate v2 (a relative program file written, run plainly with its language's
runtime, exit 0, the value as its last output line and in the reply; shell RL
rewards the same conditions) and the path audit find nothing wrong with it,
for the value the task asks (its record's `answer`). A value read off a shell
command alone would teach what both reject.

Tool results are what Pi 0.73.1 returns for those calls (its `Successfully
wrote N bytes to PATH`, `Command exited with code N`, `Could not find the
exact text in PATH...`), and every program's output is the program's real
output (a test replays each conversation's calls in a real directory with
real `python3` and `node` and compares). Nothing here depends on Python's
`hash` or the clock: the same seed gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from atoll.pi_train.bootstrap.guard import Guard
from atoll.pi_train.shell.pi_tools import TOOL_SPECS, edit_not_found, edited, ran, wrote

GENERATOR_VERSION = 2  # 2: log-count computes its count with a program; records carry `answer`
FAMILIES = ("write-run", "log-count", "fix-name-error", "fix-missing-file", "edit-retry")
LANGUAGES = ("python", "javascript")
# Families whose recovery reads a Python traceback are Python only (JavaScript stack traces
# carry absolute paths and engine versions).
FAMILY_LANGUAGES = {
    "fix-name-error": ("python",),
    "fix-missing-file": ("python",),
}

SYSTEM_PROMPT = (
    "You are a coding agent working in a workspace directory. Use the tools: read a file, "
    "write a file, edit a file with exact replacements, run shell commands with bash. Use "
    "relative paths only. When a task asks for a value, write a program that computes it, run "
    "it as `python3 FILE` or `node FILE`, read its output, and state the value in your reply. "
    "When a command fails, read the error, fix the cause and run it again."
)

# Pi 0.73.1's four tools, exactly as Pi declares them (one copy, shared with shell RL).
TOOLS: list[dict[str, Any]] = TOOL_SPECS

RUNTIME = {"python": "python3", "javascript": "node"}
EXTENSION = {"python": ".py", "javascript": ".js"}
LANGUAGE_NAME = {"python": "Python", "javascript": "JavaScript"}


@dataclass(frozen=True)
class Statistic:
    name: str
    phrase: str
    compute: Callable[[list[int]], int]
    python: str
    javascript: str


STATISTICS = (
    Statistic("sum", "the sum of", sum, "sum(values)", "values.reduce((a, b) => a + b, 0)"),
    Statistic("max", "the largest of", max, "max(values)", "Math.max(...values)"),
    Statistic("min", "the smallest of", min, "min(values)", "Math.min(...values)"),
    Statistic(
        "evens",
        "how many are even among",
        lambda v: sum(1 for x in v if x % 2 == 0),
        "sum(1 for v in values if v % 2 == 0)",
        "values.filter((v) => v % 2 === 0).length",
    ),
    Statistic(
        "squares",
        "the sum of the squares of",
        lambda v: sum(x * x for x in v),
        "sum(v * v for v in values)",
        "values.reduce((a, v) => a + v * v, 0)",
    ),
)
PROGRAM_NAMES = ("tally", "stats", "summary", "compute", "report", "measure")
DATA_NAMES = ("values.txt", "numbers.txt", "readings.txt", "samples.txt")
COMPONENTS = ("cache", "auth", "queue", "db", "web", "mail")
LEVELS = ("INFO", "WARN", "ERROR")


class CorpusError(ValueError):
    """A corpus that cannot be built as asked; the message says why."""


def rng_for(seed: int, family: str, index: int, attempt: int) -> random.Random:
    """A generator seeded by sha256 of everything that names the conversation (never `hash`)."""
    key = f"{GENERATOR_VERSION}:{seed}:{family}:{index}:{attempt}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def program(language: str, data: str, stat: Statistic) -> str:
    if language == "python":
        return (
            f'with open("{data}") as handle:\n'
            "    values = [int(line) for line in handle if line.strip()]\n"
            f"print({stat.python})\n"
        )
    return (
        'const fs = require("fs");\n'
        f'const values = fs.readFileSync("{data}", "utf8")\n'
        '  .split("\\n")\n'
        "  .filter((line) => line.trim())\n"
        "  .map(Number);\n"
        f"console.log({stat.javascript});\n"
    )


class _Conversation:
    """Builds one conversation's messages, numbering tool calls as it goes."""

    def __init__(self, task: str) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        self.calls = 0
        self.answer = ""  # the value the task asks for, stated in the reply

    def call(self, text: str, tool: str, arguments: dict[str, Any], result: str) -> None:
        self.calls += 1
        call_id = f"call_{self.calls}"
        self.messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}],
            }
        )
        self.messages.append(
            {"role": "tool", "tool_call_id": call_id, "name": tool, "content": result}
        )

    def reply(self, text: str, answer: int) -> None:
        self.messages.append({"role": "assistant", "content": text})
        self.answer = str(answer)


def _values(rng: random.Random) -> list[int]:
    return [rng.randint(-40, 99) for _ in range(rng.randint(4, 8))]


def _text_of(values: list[int]) -> str:
    return "".join(f"{v}\n" for v in values)


def _write_run(rng: random.Random, language: str) -> tuple[dict[str, str], _Conversation]:
    data, stat = rng.choice(DATA_NAMES), rng.choice(STATISTICS)
    name = rng.choice(PROGRAM_NAMES) + EXTENSION[language]
    values = _values(rng)
    source = program(language, data, stat)
    answer = stat.compute(values)
    convo = _Conversation(
        f"`{data}` holds one integer per line. Write a {LANGUAGE_NAME[language]} program "
        f"`{name}` that prints {stat.phrase} those integers, run it, and tell me the result."
    )
    convo.call(f"I'll look at `{data}` first.", "read", {"path": data}, _text_of(values))
    convo.call(
        f"One integer per line. I'll write `{name}` to print {stat.phrase} them.",
        "write",
        {"path": name, "content": source},
        wrote(name, source),
    )
    convo.call("Now I run it.", "bash", {"command": f"{RUNTIME[language]} {name}"}, f"{answer}\n")
    convo.reply(
        f"`{name}` printed {answer}: {stat.phrase} the integers in `{data}` is {answer}.", answer
    )
    return {data: _text_of(values)}, convo


def counter(language: str, log: str, prefix: str) -> str:
    """A program that prints how many lines of `log` start with `prefix`."""
    if language == "python":
        return (
            f'with open("{log}") as handle:\n'
            f'    print(sum(1 for line in handle if line.startswith("{prefix}")))\n'
        )
    return (
        'const fs = require("fs");\n'
        f'const lines = fs.readFileSync("{log}", "utf8").split("\\n");\n'
        f'console.log(lines.filter((line) => line.startsWith("{prefix}")).length);\n'
    )


def _log_count(rng: random.Random, language: str) -> tuple[dict[str, str], _Conversation]:
    level, component = rng.choice(LEVELS), rng.choice(COMPONENTS)
    name = rng.choice(PROGRAM_NAMES) + EXTENSION[language]
    lines = []
    for _ in range(rng.randint(6, 12)):
        lines.append(
            f"{rng.choice(LEVELS)} {rng.choice(COMPONENTS)} request took {rng.randint(2, 90)} ms"
        )
    log = "".join(line + "\n" for line in lines)
    prefix = f"{level} {component} "
    count = sum(1 for line in lines if line.startswith(prefix))
    source = counter(language, "service.log", prefix)
    convo = _Conversation(
        f"How many lines of `service.log` are {level} lines from the {component} component? "
        f"Count them with a {LANGUAGE_NAME[language]} program."
    )
    convo.call(
        "I'll look first with grep, matching the level and component at the start of each line.",
        "bash",
        {"command": f"grep -c '^{prefix}' service.log"},
        f"{count}\n" if count else ran("0", 1),
    )
    seen = (
        f"grep counts {count}."
        if count
        else "grep printed 0 and exited with code 1, which is how grep says nothing matched."
    )
    convo.call(
        f"{seen} Now the program that counts them: `{name}`.",
        "write",
        {"path": name, "content": source},
        wrote(name, source),
    )
    convo.call("Running it.", "bash", {"command": f"{RUNTIME[language]} {name}"}, f"{count}\n")
    if count:
        convo.reply(
            f"`{name}` printed {count}, as grep counted: {count} lines of `service.log` are "
            f"{level} lines from {component}.",
            count,
        )
    else:
        convo.reply(
            f"`{name}` printed 0, as grep found: no {level} line of `service.log` comes from "
            f"{component}.",
            count,
        )
    return {"service.log": log}, convo


_NAME_BUG = (
    "total = 0\n"
    'with open("{data}") as handle:\n'
    "    for line in handle:\n"
    "        if line.strip():\n"
    "            total += int(line)\n"
    "print(totl)\n"
)


def _fix_name_error(rng: random.Random, language: str) -> tuple[dict[str, str], _Conversation]:
    data, name = rng.choice(DATA_NAMES), rng.choice(PROGRAM_NAMES) + ".py"
    values = _values(rng)
    source = _NAME_BUG.format(data=data)
    total = sum(values)
    traceback = (
        "Traceback (most recent call last):\n"
        f'  File "/workspace/{name}", line 6, in <module>\n'
        "    print(totl)\n"
        "NameError: name 'totl' is not defined. Did you mean: 'total'?"
    )
    convo = _Conversation(f"Run `{name}` and tell me what it prints.")
    convo.call("Running it.", "bash", {"command": f"python3 {name}"}, ran(traceback, 1))
    convo.call(
        "It crashed with a NameError on line 6: `totl` is not defined. I'll read the file.",
        "read",
        {"path": name},
        source,
    )
    convo.call(
        "The loop adds into `total`, but the last line prints `totl`, a typo. I'll fix it.",
        "edit",
        {"path": name, "edits": [{"oldText": "print(totl)", "newText": "print(total)"}]},
        edited(name),
    )
    convo.call("Running it again.", "bash", {"command": f"python3 {name}"}, f"{total}\n")
    convo.reply(
        f"`{name}` had a typo (`totl` for `total`) on its last line. Fixed, it prints {total}, "
        f"the sum of the integers in `{data}`.",
        total,
    )
    return {name: source, data: _text_of(values)}, convo


def _fix_missing_file(rng: random.Random, language: str) -> tuple[dict[str, str], _Conversation]:
    data, stat = rng.choice(DATA_NAMES), rng.choice(STATISTICS)
    wrong = data.replace(".txt", "s.txt") if rng.random() < 0.5 else data.replace(".txt", ".csv")
    name = rng.choice(PROGRAM_NAMES) + ".py"
    values = _values(rng)
    broken = program("python", wrong, stat)
    answer = stat.compute(values)
    traceback = (
        "Traceback (most recent call last):\n"
        f'  File "/workspace/{name}", line 1, in <module>\n'
        f'    with open("{wrong}") as handle:\n'
        f"FileNotFoundError: [Errno 2] No such file or directory: '{wrong}'"
    )
    convo = _Conversation(f"`{name}` should print {stat.phrase} our integers. Run it and report.")
    convo.call("Running it.", "bash", {"command": f"python3 {name}"}, ran(traceback, 1))
    listing = "".join(f"{n}\n" for n in sorted([name, data]))
    convo.call(
        f"It cannot open `{wrong}`. I'll see which files the workspace has.",
        "bash",
        {"command": "ls"},
        listing,
    )
    convo.call(
        f"The data is in `{data}`, not `{wrong}`. I'll point the program at it.",
        "edit",
        {"path": name, "edits": [{"oldText": f'open("{wrong}")', "newText": f'open("{data}")'}]},
        edited(name),
    )
    convo.call("Running it again.", "bash", {"command": f"python3 {name}"}, f"{answer}\n")
    convo.reply(
        f"The program opened `{wrong}`, which does not exist; it now reads `{data}` and prints "
        f"{answer}, {stat.phrase} the integers there.",
        answer,
    )
    return {name: broken, data: _text_of(values)}, convo


def _edit_retry(rng: random.Random, language: str) -> tuple[dict[str, str], _Conversation]:
    data = rng.choice(DATA_NAMES)
    old, new = rng.sample(STATISTICS, 2)
    name = rng.choice(PROGRAM_NAMES) + EXTENSION[language]
    values = _values(rng)
    source = program(language, data, old)
    before = old.python if language == "python" else old.javascript
    after = new.python if language == "python" else new.javascript
    line = f"print({before})" if language == "python" else f"console.log({before});"
    fixed = f"print({after})" if language == "python" else f"console.log({after});"
    answer = new.compute(values)
    convo = _Conversation(
        f"`{name}` prints {old.phrase} the integers in `{data}`. Change it to print "
        f"{new.phrase} them instead, then run it."
    )
    # A first guess with extra indentation: the old text does not match the file.
    convo.call(
        "I'll replace the final print.",
        "edit",
        {"path": name, "edits": [{"oldText": "    " + line, "newText": "    " + fixed}]},
        edit_not_found(name),
    )
    convo.call(
        "The text did not match exactly. I'll read the file to copy the line as it is.",
        "read",
        {"path": name},
        source,
    )
    convo.call(
        "The line has no indentation. Replacing it exactly.",
        "edit",
        {"path": name, "edits": [{"oldText": line, "newText": fixed}]},
        edited(name),
    )
    convo.call("Now I run it.", "bash", {"command": f"{RUNTIME[language]} {name}"}, f"{answer}\n")
    convo.reply(f"`{name}` now prints {new.phrase} the integers in `{data}`: {answer}.", answer)
    return {name: source, data: _text_of(values)}, convo


BUILDERS: dict[str, Callable[[random.Random, str], tuple[dict[str, str], _Conversation]]] = {
    "write-run": _write_run,
    "log-count": _log_count,
    "fix-name-error": _fix_name_error,
    "fix-missing-file": _fix_missing_file,
    "edit-retry": _edit_retry,
}
MAX_ATTEMPTS = 50


def slots(count: int) -> list[tuple[str, str]]:
    """(family, language) of conversation i: families in turn, languages in turn within each."""
    plan: list[tuple[str, str]] = []
    per_family: dict[str, int] = {}
    while len(plan) < count:
        for family in FAMILIES:
            languages = FAMILY_LANGUAGES.get(family, LANGUAGES)
            seen = per_family.get(family, 0)
            plan.append((family, languages[seen % len(languages)]))
            per_family[family] = seen + 1
    return plan[:count]


def conversation(seed: int, index: int, family: str, language: str, guard: Guard) -> dict[str, Any]:
    """Conversation `index`: drawn again (a new attempt) while the guard rejects it."""
    reasons = []
    for attempt in range(MAX_ATTEMPTS):
        workspace, convo = BUILDERS[family](rng_for(seed, family, index, attempt), language)
        record = {
            "id": f"{family}/{language}/{index}",
            "family": family,
            "language": language,
            "attempt": attempt,
            "workspace": workspace,
            "messages": convo.messages,
            "answer": convo.answer,
        }
        why = guard.violation(json.dumps(record["messages"]) + json.dumps(workspace))
        if why is None:
            return record
        reasons.append(why)
    raise CorpusError(
        f"conversation {index} ({family}) was rejected {MAX_ATTEMPTS} times ({reasons[-1]}); "
        "the forbidden set leaves this family no room"
    )


def build(seed: int, count: int, guard: Guard) -> list[dict[str, Any]]:
    if count < 1:
        raise CorpusError(f"a corpus needs at least one conversation (got {count})")
    return [
        conversation(seed, index, family, language, guard)
        for index, (family, language) in enumerate(slots(count))
    ]


def assistant_targets(record: dict[str, Any]) -> int:
    """How many training examples a conversation gives: one per assistant message."""
    return sum(1 for m in record["messages"] if m["role"] == "assistant")
