"""Crash-safe whole-file writes, now kept in `atoll.core.durable`; old names for old imports."""

from __future__ import annotations

from atoll.core.durable import atomic_write_bytes as write_bytes_atomic
from atoll.core.durable import atomic_write_json as write_json_atomic
from atoll.core.durable import canonical_json as dump_json
from atoll.core.durable import fsync_dir

__all__ = ["dump_json", "fsync_dir", "write_bytes_atomic", "write_json_atomic"]
