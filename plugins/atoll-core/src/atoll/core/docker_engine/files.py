"""Reading the tail of a log, for error messages that show what went wrong."""

from __future__ import annotations

from pathlib import Path


def tail(path: Path, lines: int = 20, since: int = 0) -> str:
    """The last `lines` lines of `path` written after byte offset `since` ('' if none)."""
    try:
        with path.open("rb") as handle:
            handle.seek(since)
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
