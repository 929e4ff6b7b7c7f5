"""Defaults `atoll run` fills in, so that the main job runs with nothing but model endpoints named.

Two gaps of a bare `atoll run --agent X --task Y` are filled, each announced
on one stderr line so that nothing happens silently:

- job plugins: an agent's or a task's registration may name the Harbor job
  plugins it needs (`Registration.job_plugins`, the judge a task's verifier
  scores with, an agent's `stack`, the stack it trains on, and for an agent
  with a `task_scorer` those of the scorer the task's contract.json names, the
  judge for a FrontierCS task and nothing for a checker task); they are added as
  `--plugin NAME` when the command line has no `--plugin` at all. `--no-default-plugins` (consumed
  here, never seen by Harbor) or any `--plugin` of one's own opts out.
- the environment: without `--env` (or a `-c` job config), `docker` when a
  Docker engine answers at DOCKER_HOST within a second and holds the task's
  base image (and, for a task with a network policy other than public, the
  egress sidecar that enforces it), else `atoll-local`.

Harbor's own `harbor run` is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from atoll.core.argv import END_OF_OPTIONS, starts_command, values
from atoll.core.names import AGENT_FLAGS, ENV_FLAGS, PATH_FLAGS
from atoll.core.records import Kind, Registration
from atoll.core.registry import Registry
from atoll.core.scoring import contract_scorer, not_installed

NO_DEFAULT_PLUGINS = "--no-default-plugins"
CONFIG_FLAGS = ("-c", "--config")
LOCAL_ENV = "atoll-local"
DOCKER_ENV = "docker"
PING_TIMEOUT_S = 1

# The job-starting commands: the ones with --plugin and a job-wide --env.
JOB_COMMANDS: tuple[tuple[str, ...], ...] = (("run",), ("job", "start"), ("jobs", "start"))


def is_job_command(argv: Sequence[str]) -> bool:
    return starts_command(argv, JOB_COMMANDS)


def apply(argv: Sequence[str], registry: Registry) -> tuple[list[str], list[str]]:
    """argv (already short-name resolved) with the defaults added, and one note per default."""
    args = list(argv)
    if not is_job_command(args):
        return args, []
    head, tail = _split(args)
    opted_out = NO_DEFAULT_PLUGINS in head
    head = [a for a in head if a != NO_DEFAULT_PLUGINS]
    if "--help" in head:
        return head + tail, []
    notes: list[str] = []
    if not opted_out and not values(head, ("--plugin",)):
        added, agents = default_plugins(values(head, AGENT_FLAGS), registry, _task_dir(head))
        if added:
            head += [word for name in added for word in ("--plugin", name)]
            notes.append(
                f"atoll: added {' '.join(f'--plugin {n}' for n in added)} (needed by "
                f"{', '.join(agents)}); pass your own --plugin, or {NO_DEFAULT_PLUGINS}, "
                "to choose otherwise"
            )
    if not values(head, (*ENV_FLAGS, "--environment-import-path", *CONFIG_FLAGS)):
        choice = choose_environment(_task_dir(head))
        target = _environment_target(choice.name, registry)
        if target is not None:
            head += ["--env", target]
            notes.append(f"atoll: --env {choice.name} ({choice.reason}); pass --env to choose")
    return head + tail, notes


def default_plugins(
    agents: Sequence[str], registry: Registry, task_dir: Path | None = None
) -> tuple[list[str], list[str]]:
    """The job plugins the named agents and the task declare (in order, once each), and whose.

    ScorerNotInstalled when an agent scores with the scorer the task's contract
    names and no installed plugin registers it: the run could only fail later.
    """
    plugins: list[str] = []
    named: list[str] = []
    records: list[Registration | None] = [registry.agent(value) for value in agents]
    if task_dir is not None:
        records.append(registry.task_record(task_dir))
    for record in records:
        if record is None:
            continue
        needed = record.needed_job_plugins
        if record.task_scorer is not None:
            name = contract_scorer(task_dir, record.task_scorer)
            scorer = registry.find(Kind.SCORER, name)
            if scorer is None:  # refused before Harbor starts, in the agent's own words
                raise not_installed(name, registry)
            needed = scorer.needed_job_plugins + tuple(
                p for p in needed if p not in scorer.needed_job_plugins
            )
        if needed:
            named.append(record.name)
            plugins += [p for p in needed if p not in plugins]
    return plugins, named


@dataclass(frozen=True)
class EnvironmentChoice:
    name: str
    reason: str


def choose_environment(task_dir: Path | None) -> EnvironmentChoice:
    """Docker if an engine answers at DOCKER_HOST and holds the task's base image, else atoll-local."""
    import os

    import docker
    from docker.errors import DockerException, ImageNotFound
    from requests.exceptions import RequestException

    where = os.environ.get("DOCKER_HOST") or "the default Docker socket"
    try:
        client = docker.from_env(timeout=PING_TIMEOUT_S)
        client.ping()
    except (DockerException, RequestException, OSError):
        return EnvironmentChoice(LOCAL_ENV, f"no Docker engine answers at {where}")
    try:
        image = base_image(task_dir / "environment" / "Dockerfile") if task_dir else None
        if image is None:
            return EnvironmentChoice(DOCKER_ENV, f"a Docker engine answers at {where}")
        try:
            client.images.get(image)
        except ImageNotFound:
            return EnvironmentChoice(
                LOCAL_ENV,
                f"the Docker engine at {where} lacks the task's base image {image}; "
                "`atoll docker up` imports atoll's",
            )
        except (DockerException, RequestException, OSError):
            return EnvironmentChoice(LOCAL_ENV, f"the Docker engine at {where} stopped answering")
        if task_dir is not None and restricts_network(task_dir / "task.toml"):
            missing = _missing_sidecar(client)
            if missing:
                return EnvironmentChoice(
                    LOCAL_ENV,
                    f"the Docker engine at {where} lacks {missing}, which enforces the task's "
                    "network policy; `atoll docker up` builds it",
                )
        return EnvironmentChoice(DOCKER_ENV, f"the Docker engine at {where} has {image}")
    finally:
        client.close()


def restricts_network(task_toml: Path) -> bool:
    """Whether a task asks for any network policy but public, for the trial or one phase."""
    import tomllib

    try:
        config = tomllib.loads(task_toml.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    modes = [config.get(section, {}).get("network_mode") for section in _POLICY_SECTIONS]
    modes += [
        step.get(section, {}).get("network_mode")
        for step in config.get("steps", [])
        for section in ("agent", "verifier")
    ]
    return any(mode not in (None, "public") for mode in modes)


_POLICY_SECTIONS = ("environment", "agent", "verifier")


def _missing_sidecar(client: object) -> str | None:
    """A name for the egress sidecar if the engine lacks it, else None (also when unknowable)."""
    from docker.errors import DockerException

    from atoll.core.docker_engine import egress_sidecar

    try:
        found = egress_sidecar.present(client)
    except (DockerException, OSError):
        return None  # let Harbor decide
    return "Harbor's egress sidecar image" if found is False else None


_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE)


def base_image(dockerfile: Path) -> str | None:
    """The image of a Dockerfile's first FROM line, or None without a Dockerfile or a plain one."""
    try:
        lines = dockerfile.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        match = _FROM.match(line)
        if match:
            image = match.group(1)
            return None if "$" in image or image == "scratch" else image
    return None


def _split(args: list[str]) -> tuple[list[str], list[str]]:
    if END_OF_OPTIONS in args:
        at = args.index(END_OF_OPTIONS)
        return args[:at], args[at:]
    return args, []


def _task_dir(args: Sequence[str]) -> Path | None:
    paths = values(args, PATH_FLAGS)
    return Path(paths[0]) if len(paths) == 1 and Path(paths[0]).is_dir() else None


def _environment_target(name: str, registry: Registry) -> str | None:
    if name == DOCKER_ENV:
        return DOCKER_ENV
    record = registry.find(Kind.ENVIRONMENT, name)
    return record.target if record is not None else None
