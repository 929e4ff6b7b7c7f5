"""A whole Guidance-TTT run as one reef-eval episode.

reef-eval records episodes (a Harbor task under an agent) in a Lab and skips
the ones it already has, so a search whose final reward should sit beside
other agents' results is run through it: one episode, one Harbor trial, the
task's verifier giving the trusted reward. The episode is tagged with the
settings that define the run and its training mode, so a search-only run is
never pooled with a trained one. When the task needs the FrontierCS judge
(its contract's scorer, or its verifier, does) the judge is found, relayed or
started for the episode as a Harbor job's `frontiercs-judge` plugin would;
a task scored by its own checker starts none. reef-eval is
an optional extra (`atoll-guidance-ttt[reef-eval]`).

    python -m atoll.guidance_ttt.harbor.reef_episode LAB_DIR polyomino_packing \
        --set groups=8 --set rollouts=16 --set steps=30 --set training=on
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from atoll.guidance_ttt.agent import AGENT_NAME, agent_config
from atoll.guidance_ttt.config import ConfigError
from atoll.guidance_ttt.services.training_barrier import REEF_MODE, SEARCH_ONLY_MODE, TINKER_MODE
from atoll.judge import SCORER_NAME as JUDGE_SCORER
from atoll.judge import JudgeForTrials, JudgeNotReady

AGENT_IMPORT_PATH = "atoll.guidance_ttt.agent:GuidanceTTTAgent"
LOCAL_ENVIRONMENT = "atoll.core.environments.local:LocalEnvironment"
ENVIRONMENTS = ("atoll-local", "docker")
# The judge goes by one name as a scorer, as a Harbor job plugin and as its directory.
JUDGE_PLUGIN = JUDGE_SCORER


class EpisodeError(RuntimeError):
    """The episode cannot be run as asked; the message says what to fix."""


def resolve_task(task: str) -> Path:
    """A task directory, or the name of a task an atoll plugin registers."""
    path = Path(task)
    if path.is_dir():
        return path.absolute()
    from atoll.core.registry import UnknownName, load

    try:
        return load().task_dir(task)
    except UnknownName as exc:
        raise EpisodeError(str(exc)) from None


def episode_call(
    task_dir: Path, settings: Mapping[str, Any], *, environment: str = "atoll-local"
) -> dict[str, Any]:
    """The keyword arguments of `Lab.run` for one Guidance-TTT episode.

    The settings are checked here, once, so that a bad one is reported before
    any trial starts; credentials are never part of them (the agent reads its
    keys from the environment of the process that runs the trial).
    """
    config = agent_config(settings)
    if environment not in ENVIRONMENTS:
        raise EpisodeError(
            f"environment must be one of {', '.join(ENVIRONMENTS)}, not {environment!r}"
        )
    kwargs = {
        key: str(value) if isinstance(value, Path) else value for key, value in settings.items()
    }
    kwargs["state_dir"] = str(config.state_dir)
    env_override = (
        {"import_path": LOCAL_ENVIRONMENT}
        if environment == "atoll-local"
        else {"type": environment}
    )
    tags = {
        "agent": AGENT_NAME,
        "training": {"on": REEF_MODE, "tinker": TINKER_MODE}.get(config.training, SEARCH_ONLY_MODE),
        "groups": config.groups,
        "rollouts": config.rollouts,
        "steps": config.steps,
        "guidance_model": config.guidance_model,
        "executor_model": config.executor_model,
        "environment": environment,
    }
    return {
        "task": str(task_dir),
        "agent": {"import_path": AGENT_IMPORT_PATH, "kwargs": kwargs},
        "tags": tags,
        "environment": env_override,
    }


async def run_episode(
    lab_dir: Path,
    task: str | Path,
    settings: Mapping[str, Any],
    *,
    environment: str = "atoll-local",
    key: str | None = None,
) -> Any:
    """Run (or find already recorded) the episode in the Lab at `lab_dir`; its reef-eval Row."""
    try:
        from reef_eval import Lab
    except ImportError:
        raise EpisodeError(
            "reef-eval is not installed: install atoll-guidance-ttt[reef-eval]"
        ) from None
    task_dir = resolve_task(str(task))
    call = episode_call(task_dir, settings, environment=environment)
    lab = Lab(lab_dir, concurrency=1)
    if not needs_judge(task_dir):
        return await lab.run(key=key, **call)
    # The trial's verifier reaches the judge only through its socket, which no
    # Harbor job plugin provides here: the episode sets it up for itself.
    try:
        with JudgeForTrials(Path(lab_dir).resolve() / JUDGE_PLUGIN):
            return await lab.run(key=key, **call)
    except JudgeNotReady as exc:
        raise EpisodeError(str(exc)) from None


def needs_judge(task_dir: Path) -> bool:
    """Whether a run of this agent on the task needs the judge: what `atoll run` would add."""
    from atoll.core.registry import load
    from atoll.core.run_defaults import default_plugins

    return JUDGE_PLUGIN in default_plugins([AGENT_NAME], load(), task_dir)[0]


def episode_failure(row: Any) -> str | None:
    """Why a recorded episode is no result: its trial's error, or no reward at all; else None."""
    error = row.tags.get("error")
    if error:
        return str(error)
    if not row.rewards:
        return "the episode recorded no reward: the task's verifier scored nothing"
    return None


def _settings(pairs: Sequence[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise EpisodeError(f"--set takes NAME=VALUE, got {pair!r}")
        settings[name.strip()] = value
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m atoll.guidance_ttt.harbor.reef_episode",
        description="Run one Guidance-TTT search as a reef-eval episode; print its row as JSON.",
    )
    parser.add_argument("lab", type=Path, help="the reef-eval Lab directory")
    parser.add_argument("task", help="a task directory or a registered task name")
    parser.add_argument("--set", dest="pairs", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--env", dest="environment", default="atoll-local", choices=ENVIRONMENTS)
    parser.add_argument("--key", default=None, help="the episode's id in the Lab")
    args = parser.parse_args(argv)
    try:
        row = asyncio.run(
            run_episode(
                args.lab,
                args.task,
                _settings(args.pairs),
                environment=args.environment,
                key=args.key,
            )
        )
    except (EpisodeError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failure = episode_failure(row)
    print(json.dumps({"key": row.key, "rewards": row.rewards, "error": failure, "uri": row.uri}))
    if failure is not None:
        print(f"error: episode {row.key}: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
