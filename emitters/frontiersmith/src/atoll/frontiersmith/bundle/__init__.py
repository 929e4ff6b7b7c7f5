"""FrontierSmith task bundles: content-bound Harbor tasks, written atomically, read strictly.

The public API (stable; the `atoll emit frontiersmith` pipeline builds on it):

- `BundleSpec(name, title, summary, statement, solution, generator, scorer,
  feasibility, contract, mutation, seed_lineage={}, recipe_version="1",
  reference_reward=None, keywords=(), base_image=DEFAULT_BASE_IMAGE,
  agent_timeout_sec=3600.0)`: what a bundle holds, validated on creation.
- `write_bundle(out_dir, spec) -> BundleInfo(path, bundle_hash, files, resumed)`:
  atomic (temporary directory, fsync, rename) under a lock on the parent
  directory; an existing bundle is kept only if its hash matches, else BundleError.
- `render_bundle(spec) -> (files, bundle_hash)`: the same files in memory, to
  know a bundle's hash before writing it.
- `read_bundle(path) -> Bundle(path, bundle_hash, spec, task_toml)`: refuses
  symlinks, special files, odd modes, anything outside the layout, and any hash
  mismatch (BundleError).
- `BundleError`; constants `RECIPE`, `RECIPE_VERSION`, `MUTATIONS`,
  `DEFAULT_BASE_IMAGE` (python:3.12-slim), `OFFLINE_BASE_IMAGE` (atoll/base:bookworm).

The layout and the hash are defined once, in `atoll.checker.layout`.
"""

from __future__ import annotations

from atoll.frontiersmith.bundle.read import Bundle, read_bundle
from atoll.frontiersmith.bundle.spec import (
    DEFAULT_BASE_IMAGE,
    MUTATIONS,
    OFFLINE_BASE_IMAGE,
    RECIPE,
    RECIPE_VERSION,
    REFERENCE_NOTE,
    BundleError,
    BundleInfo,
    BundleSpec,
)
from atoll.frontiersmith.bundle.write import render_bundle, write_bundle

__all__ = [
    "DEFAULT_BASE_IMAGE",
    "MUTATIONS",
    "OFFLINE_BASE_IMAGE",
    "RECIPE",
    "RECIPE_VERSION",
    "REFERENCE_NOTE",
    "Bundle",
    "BundleError",
    "BundleInfo",
    "BundleSpec",
    "read_bundle",
    "render_bundle",
    "write_bundle",
]
