"""The path-word rule of the path audit: what makes one word or literal name a file
outside the workspace.

Shared by the shell-line audit (`audit_shell`, for path words of a command) and the
program-text audit (`audit_programs`, for string literals, under the stricter
`literal_kind`), so it stands alone, below both; `atoll.pi.audit` states the rule whole.
"""

from __future__ import annotations

import re

DEVICES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"})
# First components of an absolute path that name a real place in the task's container:
# the top-level directories of a Linux root and those a task container adds.
ROOT_DIRECTORIES = frozenset(
    {
        "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media",
        "mnt", "opt", "proc", "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var",
        "workspace", "tests", "solution", "logs",
    }
)  # fmt: skip
_EXPANSION_START = re.compile(r"^(\$\{[^}]*\}|\$\w+|\$\([^)]*\))/")
_ROOT_FILE = re.compile(r"^/[\w-]+\.\w+$")  # /answers.txt: a file in the root directory


def path_hits(path: str, depth: int = 0) -> list[tuple[str, str]]:
    """(kind, text) for one path word, `depth` directories below the workspace root."""
    text = path.strip()
    name = text[1:] if text.startswith("@") else text  # Pi strips a leading "@" of a path
    kind = _kind(name, depth)
    return [] if kind is None else [(kind, text)]


def _kind(name: str, depth: int) -> str | None:
    if not name:
        return None
    if re.match(r"(?i)^file:", name):
        return "url"
    if re.match(r"^~[\w.-]*(/|$)", name):  # ~, ~/x, ~user, ~user/x
        return "home"
    if re.match(r"^\$\{?HOME\}?(/|$)", name):
        return "home"
    if _EXPANSION_START.match(name):
        return "expansion"
    if name.startswith("/"):
        return None if name in DEVICES else "absolute"
    if leaves(name, depth):
        return "parent"
    return None


def leaves(name: str, depth: int) -> bool:
    """Whether a relative path climbs above the workspace root at any step."""
    level = depth
    for part in name.split("/"):
        if part == "..":
            level -= 1
            if level < 0:
                return True
        elif part not in ("", "."):
            level += 1
    return False


def literal_kind(literal: str, argument: bool = False) -> str | None:
    """The kind of a string literal of program text, or None when it is data.

    In a program a string that starts with `/` is as often data (a URL route
    `"/api"`, a regex `'/+'`, a separator `'/'`) as a file, so a literal counts
    only when it reads as a place outside the workspace: a `file:` URL, a home
    path, `..` that leaves the workspace, or an absolute path whose first
    component is a real top-level directory of the container (`ROOT_DIRECTORIES`)
    or that is a file of the root directory itself (`/answers.txt`). The path
    `argument` of a file API is a path by its place, so there any absolute path
    counts (`os.listdir('/')`, `glob.glob('/*')`), as a shell word would.
    """
    if re.match(r"(?i)^file:", literal):
        return "url"
    if re.match(r"^~[\w.-]*(/|$)", literal) or re.match(r"^\$\{?HOME\}?(/|$)", literal):
        return "home"
    if literal.startswith("/"):
        if literal in DEVICES:
            return None
        first = literal[1:].split("/", 1)[0]
        named = argument or first in ROOT_DIRECTORIES or _ROOT_FILE.match(literal)
        return "absolute" if named else None
    return "parent" if leaves(literal, 0) else None
