"""The Docker engine the tests use: skip without one on a developer's machine, fail in CI."""

from __future__ import annotations

from support import ci

CI_HINT = "CI must run `atoll docker up` and export DOCKER_HOST first"


def docker_engine() -> str:
    """DOCKER_HOST of an engine that answers and has atoll's base image."""
    from atoll.core.sandbox import SandboxError
    from atoll.core.sandbox.docker_backend import DockerBackend, engine_url

    url = engine_url()
    try:
        DockerBackend(url).check()
    except SandboxError as exc:
        ci.need(False, f"no usable Docker engine: {exc}", CI_HINT)
    return url
