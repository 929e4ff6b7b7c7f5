"""What `stdin_seekable` refuses, and the sealed memfd the bubblewrap backend hands over."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.engine import docker_engine

from atoll.core.sandbox import Mount, Pipes, SandboxError, SandboxSpec, get_backend
from atoll.core.sandbox.docker_backend import STDIN_TARGET
from atoll.core.sandbox.seekable_stdin import sealed_memfd, stdin_file


def test_a_sealed_memfd_holds_exactly_the_input_and_takes_no_change() -> None:
    data = os.urandom(100_000)
    fd = sealed_memfd(data)
    try:
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # handed over at its start
        assert os.fstat(fd).st_size == len(data)
        assert os.pread(fd, len(data) + 1, 0) == data
        for change in (lambda: os.write(fd, b"x"), lambda: os.ftruncate(fd, 1)):
            with pytest.raises(PermissionError):
                change()
        assert os.pread(fd, len(data) + 1, 0) == data
    finally:
        os.close(fd)


def test_the_host_file_for_docker_is_read_only_and_removed_after() -> None:
    with stdin_file(b"3 4\n") as path:
        assert path.read_bytes() == b"3 4\n"
        assert path.stat().st_mode & 0o777 == 0o444
    assert not path.exists() and not path.parent.exists()


def test_pipes_have_no_stdin_file_to_make_seekable() -> None:
    read_end, write_end = os.pipe()
    spec = SandboxSpec(stdin_seekable=True)
    with pytest.raises(SandboxError, match="no stdin file to make seekable"):
        get_backend("bwrap").run(["true"], spec, pipes=Pipes(read_end, write_end))
    for fd in (read_end, write_end):  # taken over and closed, refused or not
        with pytest.raises(OSError):
            os.fstat(fd)


@pytest.mark.slow
@pytest.mark.docker
def test_docker_keeps_its_stdin_path_free_only_when_it_needs_it(tmp_path: Path) -> None:
    docker_engine()
    backend = get_backend("docker")
    mounted = (Mount(tmp_path, STDIN_TARGET),)
    with pytest.raises(SandboxError, match="binds a seekable stdin"):
        backend.run(["true"], SandboxSpec(mounts=mounted, stdin_seekable=True))
    assert backend.run(["true"], SandboxSpec(mounts=mounted)).ok
    assert backend.run(["cat"], SandboxSpec(stdin_seekable=True), stdin=b"both\n").stdout == (
        b"both\n"
    )
