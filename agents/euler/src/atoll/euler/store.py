"""A local Project Euler store: public statements and resources, answers in a private part.

Layout of a store directory:

    store.json                 the index: source, layout found, per-problem availability
    problems/NNNN.html         question HTML
    problems/NNNN.txt          the same as plain text (what a model is shown)
    resources/NAME             files statements link to (copied into a rollout on demand)
    private/answers.json       expected answers (directory 0700, file 0600)

A store inside a git work tree is refused unless the repository ignores it.
Only the evaluating process reads `private/`; a rollout gets a problem's
statement in its prompt and copies of that problem's resources, never a path
into the store. A store is written whole into a sibling temporary directory
and renamed into place, so a failed import leaves the previous store (or
nothing) behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.core.durable import canonical_json, fsync_dir

FORMAT = 1
INDEX = "store.json"
PRIVATE = "private"
ANSWERS = "answers.json"


class StoreError(Exception):
    """A store that is missing, damaged or cannot be written; the message says what to do."""


@dataclass
class Problem:
    number: int
    title: str
    html: str
    text: str
    source_url: str | None
    resources: list[str] = field(default_factory=list)  # data files the statement links to
    images: list[str] = field(default_factory=list)


@dataclass
class Catalog:
    """Everything an import found, before anything is written."""

    problems: dict[int, Problem]
    answers: dict[int, str]
    resources: dict[str, bytes]
    source: dict[str, Any]
    answers_without_statement: list[int] = field(default_factory=list)

    def availability(self, number: int) -> tuple[bool, str | None, list[str]]:
        """(available, why not, missing resources) for one problem."""
        problem = self.problems[number]
        missing = [name for name in problem.resources if name not in self.resources]
        if number not in self.answers:
            return False, "no answer", missing
        if missing:
            return False, "missing resource " + ", ".join(missing), missing
        return True, None, missing

    def summary(self) -> dict[str, Any]:
        unavailable: dict[str, str] = {}
        missing: dict[str, list[str]] = {}
        for number in sorted(self.problems):
            ok, why, lost = self.availability(number)
            if not ok:
                unavailable[str(number)] = why or ""
            if lost:
                missing[str(number)] = lost
        return {
            "problems": len(self.problems),
            "answers": sum(1 for n in self.answers if n in self.problems),
            "resources": len(self.resources),
            "unavailable": unavailable,
            "missing_resources": missing,
            "answers_without_statement": sorted(self.answers_without_statement),
        }


def _padded(number: int) -> str:
    return f"{number:04d}"


def write(catalog: Catalog, root: Path) -> dict[str, Any]:
    """Write `catalog` as the store at `root`, replacing a store there; the index written."""
    root = root.absolute()
    _check_target(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.import-", dir=root.parent))
    try:
        index = _fill(catalog, staging)
        _swap_in(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return index


def _check_target(root: Path) -> None:
    _check_not_committable(root)
    if root.is_file():
        raise StoreError(f"{root} is a file; name a directory for the store")
    if root.is_dir() and any(root.iterdir()) and not (root / INDEX).is_file():
        raise StoreError(
            f"{root} is a non-empty directory that is not an Euler store; name a new directory"
        )


def _git_repository(path: Path) -> Path | None:
    for parent in [path, *path.parents]:
        if (parent / ".git").exists():
            return parent
    return None


def _check_not_committable(root: Path) -> None:
    """Answers stay in ignored local storage: a store inside a git work tree must be ignored."""
    repository = _git_repository(root)
    if repository is None:
        return
    try:
        ignored = (
            subprocess.run(
                # the answer file itself: `dir/` patterns then match the store, even before it exists
                [
                    "git",
                    "-C",
                    str(repository),
                    "check-ignore",
                    "-q",
                    "--no-index",
                    str(root / PRIVATE / ANSWERS),
                ],
                capture_output=True,
                timeout=30,
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        ignored = False
    if not ignored:
        raise StoreError(
            f"{root} is inside the git repository {repository} and not ignored by it: the store "
            "holds answers that must never be committed; choose a directory outside the "
            "repository or add it to .gitignore"
        )


def _fill(catalog: Catalog, staging: Path) -> dict[str, Any]:
    os.chmod(staging, 0o755)
    problems_dir = staging / "problems"
    resources_dir = staging / "resources"
    private = staging / PRIVATE
    problems_dir.mkdir()
    resources_dir.mkdir()
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    entries = []
    for number in sorted(catalog.problems):
        problem = catalog.problems[number]
        (problems_dir / f"{_padded(number)}.html").write_text(problem.html, "utf-8")
        (problems_dir / f"{_padded(number)}.txt").write_text(problem.text + "\n", "utf-8")
        available, why, missing = catalog.availability(number)
        entries.append(
            {
                "number": number,
                "title": problem.title,
                "source_url": problem.source_url,
                "resources": problem.resources,
                "images": problem.images,
                "missing_resources": missing,
                "has_answer": number in catalog.answers,
                "available": available,
                "unavailable_reason": why,
                "statement_sha256": hashlib.sha256(problem.text.encode()).hexdigest(),
            }
        )
    resources = {}
    for name in sorted(catalog.resources):
        data = catalog.resources[name]
        (resources_dir / name).write_bytes(data)
        resources[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    answers = {str(n): catalog.answers[n] for n in sorted(catalog.answers) if n in catalog.problems}
    answers_path = private / ANSWERS
    fd = os.open(answers_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(canonical_json({"format": FORMAT, "answers": answers}))
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(answers_path, 0o600)
    index = {
        "format": FORMAT,
        "source": catalog.source,
        "summary": catalog.summary(),
        "problems": entries,
        "resources": resources,
        "answers_sha256": hashlib.sha256(canonical_json(answers)).hexdigest(),
    }
    index["digest"] = hashlib.sha256(canonical_json(index)).hexdigest()
    (staging / INDEX).write_bytes(canonical_json(index))
    for directory in (problems_dir, resources_dir, private, staging):
        fsync_dir(directory)
    return index


def _swap_in(staging: Path, root: Path) -> None:
    """Rename the finished store into place; an old store is moved aside first, then removed."""
    old: Path | None = None
    if root.exists():
        if any(root.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
            os.rename(root, old / "store")
        else:
            root.rmdir()
    os.rename(staging, root)
    fsync_dir(root.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@dataclass(frozen=True)
class ProblemEntry:
    number: int
    title: str
    source_url: str | None
    resources: tuple[str, ...]
    available: bool
    unavailable_reason: str | None


class Store:
    """A store on disk, read-only."""

    def __init__(self, root: Path) -> None:
        self.root = root.absolute()
        index_path = self.root / INDEX
        try:
            self.index: dict[str, Any] = json.loads(index_path.read_text("utf-8"))
        except FileNotFoundError:
            raise StoreError(
                f"{self.root} is not an Euler store (no {INDEX}); make one with "
                "`atoll euler import ZIP --store DIR` or `atoll euler import --sample --store DIR`"
            ) from None
        except (OSError, ValueError) as exc:
            raise StoreError(f"{index_path} cannot be read: {exc}") from None
        if self.index.get("format") != FORMAT:
            raise StoreError(f"{index_path} has format {self.index.get('format')!r}, not {FORMAT}")
        self._entries = {
            int(e["number"]): ProblemEntry(
                int(e["number"]),
                str(e.get("title") or f"Problem {e['number']}"),
                e.get("source_url"),
                tuple(e.get("resources") or ()),
                bool(e.get("available")),
                e.get("unavailable_reason"),
            )
            for e in self.index.get("problems", [])
        }
        self._answers: dict[str, str] | None = None

    @property
    def digest(self) -> str:
        return str(self.index.get("digest", ""))

    def numbers(self) -> list[int]:
        return sorted(self._entries)

    def entry(self, number: int) -> ProblemEntry | None:
        return self._entries.get(number)

    def statement_text(self, number: int) -> str:
        """The statement as text; StoreError naming the file if it is gone."""
        path = self.root / "problems" / f"{_padded(number)}.txt"
        try:
            return path.read_text("utf-8").strip()
        except FileNotFoundError:
            raise StoreError(f"the statement of problem {number} is missing ({path})") from None

    def resource_path(self, name: str) -> Path:
        return self.root / "resources" / name

    def missing(self, number: int) -> str | None:
        """Why problem `number` cannot be attempted now (no statement, answer or resource), or None."""
        entry = self._entries.get(number)
        if entry is None:
            return f"problem {number} is not in the store"
        if not (self.root / "problems" / f"{_padded(number)}.txt").is_file():
            return f"the statement of problem {number} is missing"
        lost = [n for n in entry.resources if not self.resource_path(n).is_file()]
        if lost:
            return f"problem {number} needs resource {', '.join(lost)}, which is not in the store"
        if not entry.available and entry.unavailable_reason:
            return f"problem {number} is unavailable: {entry.unavailable_reason}"
        if self._answer_map().get(str(number)) is None:
            return f"problem {number} has no answer in the store's private part"
        return None

    def expected(self, number: int) -> str:
        """The expected answer: read only here, by the scoring process."""
        value = self._answer_map().get(str(number))
        if value is None:
            raise StoreError(f"problem {number} has no answer in {self.root / PRIVATE / ANSWERS}")
        return value

    def _answer_map(self) -> dict[str, str]:
        if self._answers is None:
            path = self.root / PRIVATE / ANSWERS
            try:
                data = json.loads(path.read_text("utf-8"))
            except FileNotFoundError:
                raise StoreError(f"{path} is missing: re-import the store") from None
            except (OSError, ValueError) as exc:
                raise StoreError(f"{path} cannot be read: {exc}") from None
            mode = path.stat().st_mode & 0o777
            if mode & 0o077:
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o600)
            self._answers = {str(k): str(v) for k, v in (data.get("answers") or {}).items()}
        return self._answers
