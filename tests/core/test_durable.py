"""The one atomic-write path every plugin uses."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from atoll.core.durable import (
    atomic_replace,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    canonical_json,
)


def test_write_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    atomic_write_text(target, "old")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_failed_encoding_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    atomic_write_json(target, {"a": 1})
    with pytest.raises(ValueError):
        atomic_write_json(target, {"a": math.nan})
    assert json.loads(target.read_text()) == {"a": 1}


def test_replace_block_that_raises_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "rootfs.tar"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_replace(target, suffix=".tar") as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("tar failed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["rootfs.tar"]
    with atomic_replace(target, suffix=".tar") as tmp:
        tmp.write_bytes(b"whole")
    assert target.read_bytes() == b"whole"


def test_parents_only_on_request(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b.json"
    with pytest.raises(FileNotFoundError):
        atomic_write_json(target, {})
    atomic_write_json(target, {}, make_parents=True)
    assert target.read_text() == "{}\n"


def test_canonical_json_is_one_encoding_per_value() -> None:
    assert canonical_json({"b": "é", "a": [1]}) == canonical_json({"a": [1], "b": "é"})
    assert canonical_json({"b": "é", "a": [1]}) == '{"a": [1], "b": "é"}\n'.encode()
