"""atoll-core's own registrations: the commands every install has."""

from __future__ import annotations

from atoll.core import reef_env
from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "plugins",
            Kind.COMMAND,
            "atoll.core.plugins_cmd:app",
            "List installed atoll plugins, Harbor job plugins and where each command comes from.",
            # Harbor's `plugins list` shows its job plugins; this one shows those too.
            extends_harbor=True,
        ),
        Registration(
            "doctor",
            Kind.COMMAND,
            "atoll.core.doctor:doctor_app",
            "Check what this machine has for each plugin, with fixes.",
        ),
        Registration(
            "docker",
            Kind.COMMAND,
            "atoll.core.docker_engine.cli:app",
            "A private Docker engine on its own socket, with Compose and the base image.",
            requires=("docker",),
        ),
        Registration(
            "emit",
            Kind.COMMAND,
            "atoll.core.emit_cmd:app",
            "Run a task emitter registered by a plugin (atoll emit NAME ...).",
        ),
        Registration(
            "sandbox",
            Kind.COMMAND,
            "atoll.core.sandbox_cmd:app",
            "Check a sandbox backend against the conformance suite; serve SandboxFusion's run_code API.",
        ),
    ]


@hookimpl
def atoll_environments() -> list[Registration]:
    return [
        Registration(
            "atoll-local",
            Kind.ENVIRONMENT,
            "atoll.core.environments.local:LocalEnvironment",
            "Trials under bubblewrap on this machine: no container engine needed.",
            requires=("bwrap",),
        ),
    ]


# name, function in atoll.core.doctor, what the requirement is for
_CHECKS = (
    ("python", "check_python", "Python 3.12, which Harbor requires."),
    ("harbor", "check_harbor", "Harbor 0.20.x, the evaluation host."),
    ("docker", "check_docker", "A Docker engine at DOCKER_HOST, and Harbor's egress sidecar."),
    ("bwrap", "check_bwrap", "bubblewrap, the process sandbox."),
    ("g++", "check_gxx", "A C++ compiler for judged programs."),
    ("git-lfs", "check_git_lfs", "git-lfs, which Reef's server needs."),
    ("reef", "check_reef", f"A Reef server at {reef_env.URL_ENV}."),
    ("gpu", "check_gpu", "NVIDIA GPUs, for training."),
)


@hookimpl
def atoll_doctor_checks() -> list[Registration]:
    return [
        Registration(name, Kind.CHECK, f"atoll.core.doctor:{function}", summary)
        for name, function, summary in _CHECKS
    ]
