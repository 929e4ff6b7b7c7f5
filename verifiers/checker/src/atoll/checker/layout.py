"""The layout of a graded task bundle, and the hash that binds its content.

A bundle is exactly the files in `FILES`, with exactly those modes, in the
directories `DIRS` (mode 0755), plus any of the files in `OPTIONAL`: no
symlink, no special file, nothing else. Its hash is the sha256 of one
canonical JSON document: the parsed task.toml without `metadata.bundle_hash`,
and, for every other file present (of `FILES` and `OPTIONAL`), its path,
sha256 and mode.

The optional files are what a task carries for tools other than its trial,
never in the image and never shown to the learner: the search contract
(`contract.json`, which a Guidance-TTT search reads) and the baseline program
with the programs' summaries (`solution/`, where a search takes its seed). The
hash covers them like any other file, so a changed search contract or
baseline is a different bundle; a bundle without them hashes as before they
existed. Parsing task.toml (rather than hashing its bytes) makes the hash
independent of where the writer put the hash line, while any change to a
value still changes it.

The FrontierSmith bundle writer and reader and `atoll checker verify` all use
this one definition, so a bundle verifies the same way wherever it is checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.sizes import MiB

FORMAT = "atoll.task-bundle/1"
HASH_FIELD = "bundle_hash"
HASH_PREFIX = "sha256:"

TASK_TOML = "task.toml"
FILES: dict[str, int] = {
    TASK_TOML: 0o644,
    "instruction.md": 0o644,
    "environment/Dockerfile": 0o644,
    "solution/solution.py": 0o644,
    "solution/solve.sh": 0o755,
    "tests/test.sh": 0o755,
    "tests/grader.py": 0o644,
    "tests/generator.py": 0o644,
    "tests/scorer.py": 0o644,
    "tests/feasibility.py": 0o644,
    "tests/contract.json": 0o644,
}
# Files a bundle may carry beside FILES, covered by the hash when present (see the docstring).
SEARCH_CONTRACT = "contract.json"
OPTIONAL: dict[str, int] = {
    SEARCH_CONTRACT: 0o644,
    "solution/baseline.py": 0o644,
    "solution/baseline-summary.txt": 0o644,
    "solution/summary.txt": 0o644,
}
# A C++ task (its tests/contract.json says "cpp") carries its programs under these names
# instead; everything else is the same. A bundle is one language or the other, never both.
CPP_NAMES = {
    "solution/solution.py": "solution/solution.cpp",
    "solution/baseline.py": "solution/baseline.cpp",
}
LANGUAGES = ("python", "cpp")
DIRS = ("environment", "solution", "tests")
DIR_MODE = 0o755
MAX_FILE_BYTES = 16 * MiB
# Every file a bundle of any language may hold, with its mode.
_ANY_MODE: dict[str, int] = {
    path: mode
    for language in LANGUAGES
    for files in (FILES, OPTIONAL)
    for path, mode in {
        (CPP_NAMES.get(p, p) if language == "cpp" else p): m for p, m in files.items()
    }.items()
}


class LayoutError(Exception):
    """The directory is not a well-formed bundle, or its content does not match its hash."""


def _renamed(files: dict[str, int], language: str) -> dict[str, int]:
    if language not in LANGUAGES:
        raise ValueError(f"no bundle layout for the language {language!r}")
    names = CPP_NAMES if language == "cpp" else {}
    return {names.get(path, path): mode for path, mode in files.items()}


def files_for(language: str) -> dict[str, int]:
    """The required files of a bundle whose programs are in `language`."""
    return _renamed(FILES, language)


def optional_for(language: str) -> dict[str, int]:
    """The optional files of a bundle whose programs are in `language`."""
    return _renamed(OPTIONAL, language)


def language_of(paths: Collection[str]) -> str:
    """The language of a bundle's programs, from the reference solution's file name."""
    return "cpp" if CPP_NAMES["solution/solution.py"] in paths else "python"


@dataclass(frozen=True)
class BundleFile:
    path: str
    mode: int
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def record(self) -> dict[str, str]:
        return {"path": self.path, "sha256": self.sha256, "mode": f"{self.mode:04o}"}


def scan(task_dir: Path) -> dict[str, BundleFile]:
    """Every file of the bundle at `task_dir`, read without following any link.

    LayoutError names the first entry that is not allowed: a symlink, a
    special file, a file or directory outside the layout, a wrong mode, or a
    missing file.
    """
    root = Path(task_dir)
    try:
        info = os.lstat(root)
    except OSError as exc:
        raise LayoutError(f"{root}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise LayoutError(f"{root} is not a directory (a symlink to one is refused)")
    found: dict[str, BundleFile] = {}
    for top in sorted(os.listdir(root)):
        _entry(root, top, found)
    language = language_of(found)
    required, optional = files_for(language), optional_for(language)
    stray = sorted(set(found) - set(required) - set(optional))
    if stray:
        raise LayoutError(f"{root}: {stray[0]} is not part of a {language} bundle")
    missing = sorted(set(required) - set(found))
    if missing:
        raise LayoutError(f"{root}: missing {', '.join(missing)}")
    return found


def _entry(root: Path, relative: str, found: dict[str, BundleFile]) -> None:
    path = root / relative
    info = os.lstat(path)
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        raise LayoutError(f"{relative} is a symbolic link; bundles hold regular files only")
    if stat.S_ISDIR(info.st_mode):
        if relative not in DIRS:
            raise LayoutError(f"{relative}/ is not part of a bundle (only {', '.join(DIRS)})")
        if mode != DIR_MODE:
            raise LayoutError(f"{relative}/ has mode {mode:04o}; bundle directories have 0755")
        for child in sorted(os.listdir(path)):
            _entry(root, f"{relative}/{child}", found)
        return
    if not stat.S_ISREG(info.st_mode):
        raise LayoutError(f"{relative} is a special file; bundles hold regular files only")
    expected = _ANY_MODE.get(relative)
    if expected is None:
        raise LayoutError(f"{relative} is not part of a bundle")
    if mode != expected:
        raise LayoutError(f"{relative} has mode {mode:04o}; it must be {expected:04o}")
    found[relative] = BundleFile(relative, mode, _read(path))


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LayoutError(f"{path} changed into a special file while being read")
        chunks, total = [], 0
        while chunk := os.read(fd, MiB):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise LayoutError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_task_toml(data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LayoutError(f"task.toml does not parse: {exc}") from None


def without_hash(task_toml: Mapping[str, Any]) -> dict[str, Any]:
    """task.toml's parsed content with `metadata.bundle_hash` taken out."""
    content = dict(task_toml)
    metadata = dict(content.get("metadata", {}))
    metadata.pop(HASH_FIELD, None)
    content["metadata"] = metadata
    return content


def digest(task_toml: Mapping[str, Any], files: Mapping[str, BundleFile]) -> str:
    """The bundle hash of a parsed task.toml (its own hash ignored) and the other files."""
    document = {
        "format": FORMAT,
        "task_toml": without_hash(task_toml),
        "task_toml_mode": f"{FILES[TASK_TOML]:04o}",
        "files": [files[p].record() for p in sorted(files) if _hashed(p)],
    }
    encoded = json.dumps(
        document, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")
    return HASH_PREFIX + hashlib.sha256(encoded).hexdigest()


def _hashed(path: str) -> bool:
    return path != TASK_TOML and path in _ANY_MODE


def declared_hash(task_toml: Mapping[str, Any]) -> str | None:
    value = task_toml.get("metadata", {}).get(HASH_FIELD)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Verified:
    files: dict[str, BundleFile]
    task_toml: dict[str, Any]
    bundle_hash: str


def verify(task_dir: Path) -> Verified:
    """Scan the bundle and check that its content matches the hash task.toml declares."""
    files = scan(task_dir)
    task_toml = parse_task_toml(files[TASK_TOML].data)
    declared = declared_hash(task_toml)
    if declared is None:
        raise LayoutError(f"task.toml has no metadata.{HASH_FIELD}")
    computed = digest(task_toml, files)
    if computed != declared:
        raise LayoutError(
            f"the bundle's content does not match its hash: task.toml declares {declared}, "
            f"the files hash to {computed}"
        )
    return Verified(files, task_toml, computed)
