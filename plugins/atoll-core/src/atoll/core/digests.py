"""The digest of a directory tree's content, where two tools must agree it is unchanged.

The `checker` scorer puts the digest of the task's `tests/` (its grader) in
every candidate's receipt, and a Guidance-TTT run keeps it in its resume state
so that a resume refuses a task whose grader changed; one definition makes
the two comparable.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def tree_sha256(directory: Path) -> str:
    """sha256 over the relative path and bytes of every regular file under `directory`."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(directory)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
