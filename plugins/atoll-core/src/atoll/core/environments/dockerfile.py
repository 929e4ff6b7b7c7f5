"""What of a task's Dockerfile can be honoured without building an image.

`atoll-local` runs trials on the host's own system directories, so it keeps
only the instructions that place files or set the process context: plain
`COPY`/`ADD`, `WORKDIR`, `ENV` and `USER`. Everything else that would change
the image (`RUN`, `COPY --from`, `ADD <url>`) is counted, so the environment
can say in one line what it did not build.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

# Instructions that only describe how to run or label an image.
_METADATA = {
    "FROM",
    "CMD",
    "ENTRYPOINT",
    "EXPOSE",
    "LABEL",
    "ARG",
    "SHELL",
    "HEALTHCHECK",
    "VOLUME",
    "STOPSIGNAL",
    "MAINTAINER",
    "ONBUILD",
}


@dataclass(frozen=True)
class Copy:
    """One plain COPY/ADD: context-relative sources to an absolute destination."""

    sources: tuple[str, ...]
    dest: str
    dest_is_dir: bool
    chown: str | None = None


@dataclass
class Plan:
    workdir: str | None = None
    # Every WORKDIR in order, with the USER in effect there: BuildKit creates a missing
    # WORKDIR owned by that user (the classic builder by root; a task that needs either
    # behaviour everywhere creates the directory itself in a RUN step).
    workdirs: list[tuple[str, str | None]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    copies: list[Copy] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # instructions not built


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append((current + stripped).strip())
        current = ""
    if current.strip():
        lines.append(current.strip())
    return lines


def _words(arguments: str) -> list[str]:
    if arguments.startswith("["):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(w, str) for w in parsed):
            return parsed
    return shlex.split(arguments)


def _env_pairs(arguments: str) -> dict[str, str]:
    words = shlex.split(arguments)
    if words and "=" not in words[0]:  # legacy form: ENV KEY value with spaces
        return {words[0]: arguments.split(None, 1)[1] if len(words) > 1 else ""}
    return dict(word.split("=", 1) for word in words if "=" in word)


def _expand(value: str, env: dict[str, str]) -> str:
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), m.group(0)), value
    )


def parse(path: Path) -> Plan:
    """Read a Dockerfile into the part `atoll-local` applies and the part it skips."""
    plan = Plan()
    workdir = "/"
    for line in _logical_lines(path.read_text()):
        instruction, _, arguments = line.partition(" ")
        instruction = instruction.upper()
        arguments = arguments.strip()
        if instruction in _METADATA:
            continue
        if instruction == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, _expand(arguments, plan.env)))
            plan.workdir = workdir
            plan.workdirs.append((workdir, plan.user))
        elif instruction == "ENV":
            plan.env.update({k: _expand(v, plan.env) for k, v in _env_pairs(arguments).items()})
        elif instruction == "USER":
            plan.user = arguments.split(":", 1)[0] or None
        elif instruction in ("COPY", "ADD"):
            copy = _copy(instruction, arguments, workdir, plan.env)
            if copy is None:
                plan.skipped.append(line)
            else:
                plan.copies.append(copy)
        else:
            plan.skipped.append(line)
    return plan


def _fetches_or_unpacks(source: str) -> bool:
    """ADD downloads URLs and unpacks local archives: neither is a plain copy."""
    archive = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst")
    return bool(re.match(r"^[a-z]+://", source)) or source.endswith((".git", *archive))


def _copy(instruction: str, arguments: str, workdir: str, env: dict[str, str]) -> Copy | None:
    words = _words(arguments)
    chown = None
    while words and words[0].startswith("--"):
        flag = words.pop(0)
        if flag.startswith("--chown="):
            chown = flag.split("=", 1)[1].split(":", 1)[0]
        elif flag.startswith(("--from", "--link", "--parents", "--exclude", "--checksum")):
            return None  # needs another image or the builder's semantics
    if len(words) < 2:
        return None
    *sources, dest = (_expand(w, env) for w in words)
    if instruction == "ADD" and any(_fetches_or_unpacks(s) for s in sources):
        return None
    dest_is_dir = dest.endswith("/") or len(sources) > 1 or any("*" in s for s in sources)
    dest = posixpath.normpath(posixpath.join(workdir, dest))
    return Copy(tuple(sources), dest, dest_is_dir, chown)
