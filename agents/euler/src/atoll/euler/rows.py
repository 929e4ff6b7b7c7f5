"""Raw rollout rows: one JSON object per line, appended durably; the source of truth.

A row is appended and fsync'd as soon as its rollout is scored, so a killed
run loses at most the rollout in flight. A reader drops a torn last line (the
write a kill interrupted) and says so; a damaged line anywhere else is an
error, since silently skipping it would change the numbers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROW_FORMAT = 1
ROWS_FILE = "rows.jsonl"


class RowsError(Exception):
    """A rows file that cannot be read; the message names the file and line."""


def attempt_key(row: dict[str, Any]) -> tuple[str, str, str, str, int]:
    """What identifies an attempt within a run: phase, problem, language, approach, sample."""
    return (
        str(row.get("phase", "")),
        str(row.get("problem", "")),
        str(row.get("language", "")),
        str(row.get("approach", "")),
        int(row.get("sample", 0)),
    )


def latest_per_attempt(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per attempt of each run: its last scored row, else its last row.

    A retried attempt leaves its error rows in the file (nothing is rewritten);
    reports count the attempt once, by its outcome.
    """
    chosen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = (row.get("run_id"), *attempt_key(row))
        if row.get("status") == "scored" or chosen.get(key, {}).get("status") != "scored":
            chosen[key] = row
    return list(chosen.values())


def append(path: Path, row: dict[str, Any]) -> None:
    """Append one row and make it durable before returning."""
    line = json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def repair(path: Path) -> int:
    """Cut a torn last line off `path` (a kill during a write); the bytes removed."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with path.open("r+b") as handle:
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    return len(data) - keep


def read(path: Path, *, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """The rows of one file; a torn last line is dropped (noted in `warnings`)."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise RowsError(f"cannot read {path}: {exc.strerror}") from None
    rows = []
    last = len(lines) - 1
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError:
            if number - 1 == last:  # no newline after it: a write that a kill cut short
                if warnings is not None:
                    warnings.append(f"{path}: dropped a torn last line (an interrupted write)")
                continue
            raise RowsError(f"{path} line {number} is not a JSON row") from None
        if not isinstance(row, dict):
            raise RowsError(f"{path} line {number} is not a JSON object")
        rows.append(row)
    return rows


def find_files(paths: Iterable[Path]) -> list[Path]:
    """Rows files named directly, or found under directories (eval dirs, curriculum state)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            direct = path / ROWS_FILE
            if direct.is_file():
                found.append(direct)
            else:
                found.extend(sorted(path.rglob(ROWS_FILE)))
        elif path.is_file():
            found.append(path)
        else:
            raise RowsError(f"{path} does not exist")
    if not found:
        raise RowsError("no rows.jsonl found in " + ", ".join(str(p) for p in paths))
    return found


def read_all(paths: Iterable[Path], *, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in find_files(paths):
        rows.extend(read(path, warnings=warnings))
    return rows
