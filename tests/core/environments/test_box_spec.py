"""One exec's box spec, shared by atoll-local and the checker scorer so they cannot drift."""

from __future__ import annotations

from pathlib import Path

from atoll.core.environments.box import EXEC_PROCESSES, box_limits, box_spec
from atoll.core.environments.trial_root import TrialRoot
from atoll.core.sandbox import Mount, Network
from atoll.core.sizes import MiB


def test_the_spec_binds_the_roots_tops_and_layers_login_image_and_exec_env(tmp_path: Path):
    root = TrialRoot(tmp_path)
    try:
        extra = Mount(tmp_path, "/data")
        spec = box_spec(
            root,
            root.root_user,
            cwd="/workspace",
            limits=box_limits(timeout_sec=5, memory_mb=64, cpus=1),
            user_namespace="/proc/self/ns/user",
            network=Network.NONE,
            image_env={"PATH": "/opt/bin:/usr/bin", "LANG": "en_US.UTF-8"},
            env={"PATH": "/usr/bin"},
            extra_mounts=[extra],
        )
        assert spec.workdir == "/workspace" and spec.network is Network.NONE
        assert {m.target for m in spec.mounts} >= {"/tests", "/tmp", "/etc/passwd", "/data"}
        assert spec.env["TERM"] == "xterm" and spec.env["HOME"] == "/root"
        assert spec.env["LANG"] == "en_US.UTF-8"  # the image's ENV over the login defaults
        assert spec.env["PATH"] == "/usr/bin"  # the exec's own over the image's
    finally:
        root.remove()


def test_limits_are_the_phases_or_none():
    limits = box_limits(timeout_sec=5, memory_mb=64, cpus=2)
    assert (limits.wall_seconds, limits.memory_bytes, limits.cpus) == (5.0, 64 * MiB, 2.0)
    assert limits.processes == EXEC_PROCESSES
    none = box_limits(timeout_sec=None, memory_mb=None, cpus=None)
    assert (none.wall_seconds, none.memory_bytes, none.cpus) == (None, None, None)
