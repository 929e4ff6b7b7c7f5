"""The backend factory: names, errors, and no docker SDK for bwrap users."""

from __future__ import annotations

import subprocess
import sys

import pytest

from atoll.core.sandbox import SandboxError, SandboxSpec, backend_names, get_backend


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(SandboxError, match="known backends: bwrap, docker"):
        get_backend("podman")


def test_backends_are_shared_instances():
    assert get_backend("bwrap") is get_backend("bwrap")
    assert get_backend("bwrap").name == "bwrap"
    assert backend_names() == ["bwrap", "docker"]


def test_bwrap_use_does_not_import_the_docker_sdk():
    code = (
        "import sys\n"
        "from atoll.core.sandbox import get_backend, SandboxSpec\n"
        "assert get_backend('bwrap').run(['true'], SandboxSpec()).ok\n"
        "print('docker' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_root_is_refused():
    with pytest.raises(SandboxError, match="never run as root"):
        get_backend("bwrap").run(["true"], SandboxSpec(uid=0, gid=0))


def test_bad_mount_target_is_refused(tmp_path):
    from atoll.core.sandbox import Mount

    spec = SandboxSpec(mounts=(Mount(tmp_path, "/a/../etc"),))
    with pytest.raises(SandboxError, match="absolute path below /"):
        get_backend("bwrap").run(["true"], spec)
