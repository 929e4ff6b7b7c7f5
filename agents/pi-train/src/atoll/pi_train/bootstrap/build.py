"""`atoll pi bootstrap build OUT`: the corpus on disk, with a manifest of counts and hashes.

OUT holds `conversations.jsonl` (one conversation per line, canonical JSON)
and `manifest.json`, written last: a directory whose manifest names the
conversations' sha256 is a complete corpus. The manifest carries what the
trainer needs besides the conversations (the system prompt and Pi's tool
schemas) and what the guard checked.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_bytes, atomic_write_json, canonical_json
from atoll.pi_train.bootstrap import corpus
from atoll.pi_train.bootstrap.guard import Guard

CONVERSATIONS = "conversations.jsonl"
MANIFEST = "manifest.json"
FORMAT = 1


class CorpusInputError(ValueError):
    """A corpus directory that cannot be written or read; the message says which and why."""


def encode(records: list[dict[str, Any]]) -> bytes:
    return b"".join(canonical_json(r) + b"\n" for r in records)


def write(out: Path, seed: int, count: int, guard: Guard) -> dict[str, Any]:
    """Build the corpus and write it into `out` (replacing a corpus there); its manifest."""
    if out.is_file():
        raise CorpusInputError(f"{out} is a file; name a directory for the corpus")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise CorpusInputError(f"{out} is a non-empty directory that holds no corpus")
    try:
        records = corpus.build(seed, count, guard)
    except corpus.CorpusError as exc:
        raise CorpusInputError(str(exc)) from None
    data = encode(records)
    manifest = {
        "format": FORMAT,
        "generator_version": corpus.GENERATOR_VERSION,
        "seed": seed,
        "conversations": len(records),
        "examples": sum(corpus.assistant_targets(r) for r in records),
        "families": dict(sorted(Counter(r["family"] for r in records).items())),
        "languages": dict(sorted(Counter(r["language"] for r in records).items())),
        "tool_calls": dict(
            sorted(
                Counter(
                    call["name"]
                    for r in records
                    for m in r["messages"]
                    for call in m.get("tool_calls", [])
                ).items()
            )
        ),
        "redrawn": sum(1 for r in records if r["attempt"] > 0),
        "system_prompt": corpus.SYSTEM_PROMPT,
        "tools": corpus.TOOLS,
        "guard": guard.describe(),
        "files": {CONVERSATIONS: hashlib.sha256(data).hexdigest()},
        "training": {"train_on_what": "last_assistant_message", "one_prefix_per_target": True},
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # a half-replaced corpus never looks complete
    atomic_write_bytes(out / CONVERSATIONS, data)
    atomic_write_json(out / MANIFEST, manifest)
    return manifest


def read(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A complete corpus: its manifest and conversations, checked against the manifest's hash."""
    manifest_path = path / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text("utf-8"))
        data = (path / CONVERSATIONS).read_bytes()
    except FileNotFoundError:
        raise CorpusInputError(
            f"{path} is not a bootstrap corpus (no {MANIFEST} or {CONVERSATIONS}); "
            "make one with `atoll pi bootstrap build DIR`"
        ) from None
    except (OSError, ValueError) as exc:
        raise CorpusInputError(f"{manifest_path} cannot be read: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise CorpusInputError(f"{manifest_path} has format {manifest.get('format')!r}")
    if hashlib.sha256(data).hexdigest() != manifest.get("files", {}).get(CONVERSATIONS):
        raise CorpusInputError(
            f"{path / CONVERSATIONS} does not match its manifest's sha256; rebuild the corpus"
        )
    return manifest, [json.loads(line) for line in data.splitlines() if line.strip()]
