"""Launch one training run: manifest, scoring service, the managed trainer, summary.

The run directory is the cookbook's log path, so a rerun with the same
settings resumes after the last saved iteration (every iteration is saved)
and never repeats one. A rerun whose settings differ (other than a larger
`--iterations`) is refused rather than mixed into the same directory.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as metadata
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atoll.core import process_group
from atoll.core.durable import atomic_write_json
from atoll.pi_train import env as managed_env
from atoll.pi_train.training import summary, trained_on
from atoll.pi_train.training.scoring import ScoringService

HOSTED_BASE_URL = "https://tinker.thinkingmachines.dev/services/tinker-prod"
MAX_SUBMISSIONS = 2  # the first submission and one repair attempt
ALL_CASES_BONUS = 1.0
# A hidden-variant trajectory's bound and what reaching it earns: tinker-cookbook's
# recipes/code_rl values (`max_trajectory_tokens`, `context_overflow_reward`).
MAX_TRAJECTORY_TOKENS = 32 * 1024
CONTEXT_OVERFLOW_REWARD = -0.1


class RunError(Exception):
    """A run that cannot start or did not finish; the message says why and what to do."""


class RunInputError(RunError):
    """Bad input or a missing prerequisite (no key, other settings in the run directory)."""


@dataclass(frozen=True)
class TrainSettings:
    base_model: str
    renderer: str
    base_url: str
    lora_rank: int
    learning_rate: float
    groups_per_batch: int
    group_size: int
    iterations: int
    max_tokens: int
    languages: tuple[str, ...]
    # The training state the run starts from (`--load-checkpoint`); None: the base model.
    load_checkpoint: str | None = None


def default_base_url() -> str:
    return os.environ.get("TINKER_BASE_URL") or HOSTED_BASE_URL


def api_key() -> str:
    key = os.environ.get("TINKER_API_KEY", "")
    if not key:
        raise RunInputError(
            "TINKER_API_KEY is not set: export your Tinker key (for the local server, "
            '`eval "$(atoll tinker local up --print-env)"`)'
        )
    return key


def _versions() -> dict[str, str]:
    found = {}
    for name in ("atoll-pi-train", "atoll-core"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[name] = metadata.version(name)
    return found


def hold_run_dir(stack: contextlib.ExitStack[Any], run_dir: Path, command: str) -> None:
    """Make this process the run directory's only writer until `stack` closes.

    Two commands on one `--out` would train the same iterations twice into
    one log and race on its checkpoints; the second is refused with one line
    naming the holder. The lock is atoll-euler's run-directory writer lock
    (an OS file lock, released when its process dies, and `writer.json`
    saying who holds it), the same every atoll run directory uses.
    """
    from atoll.euler import writer

    try:
        stack.enter_context(writer.hold(run_dir, command))
    except writer.RunDirInUse as exc:
        raise RunInputError(str(exc)) from None


def prepare_manifest(
    run_dir: Path,
    command: str,
    settings: Any,
    task_set: dict[str, Any],
    bounds: dict[str, Any],
    extra: dict[str, Any],
    free: tuple[str, ...] = ("iterations", "base_url"),
    trained: dict[str, Any] | None = None,
    started_from: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the manifest, or check a resumed run's manifest against these settings.

    `settings` is a dataclass of the command's settings; the `free` ones may
    change between runs in one directory (how long and where, not what is trained).
    `trained` is what the run trains on and `started_from` where its
    `--load-checkpoint` state came from (atoll.pi_train.training.trained_on): both are
    rewritten with the manifest, so a longer run records its longer task list.
    A loaded state with no `started_from` is recorded as untraced, never as a
    base model.
    """
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(settings).items()}
    state = getattr(settings, "load_checkpoint", None)
    lineage = started_from if started_from is not None else trained_on.started_from(state, state)
    manifest = {
        "command": command,
        "config": config,
        "packages": _versions(),
        "managed_environment": managed_env.requirements(),
        "task_set": task_set,
        "bounds": bounds,
        **extra,
        **({trained_on.TRAINED_ON: trained} if trained is not None else {}),
        trained_on.STARTED_FROM: lineage,
    }
    path = run_dir / "manifest.json"
    unbound = ("packages", "task_set", trained_on.TRAINED_ON, trained_on.STARTED_FROM)
    if path.is_file():
        old = json.loads(path.read_text())
        manifest[trained_on.STARTED_FROM] = trained_on.keep_known(
            lineage, old.get(trained_on.STARTED_FROM)
        )
        mine = {k: v for k, v in manifest.items() if k not in unbound}
        theirs = {k: v for k, v in old.items() if k not in unbound}
        # A setting left at None equals one a manifest written before it existed lacks.
        mine["config"] = {
            k: v for k, v in mine["config"].items() if k not in free and v is not None
        }
        theirs["config"] = {
            k: v for k, v in theirs.get("config", {}).items() if k not in free and v is not None
        }
        # A directory with no saved checkpoint holds nothing trained: new settings replace
        # the old (so a run its trainer refused, e.g. a token bound too small, is rerun).
        if mine != theirs and (run_dir / "checkpoints.jsonl").is_file():
            changed = sorted(
                k
                for k in set(mine["config"]) | set(theirs["config"])
                if mine["config"].get(k) != theirs["config"].get(k)
            ) or sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise RunInputError(
                f"{run_dir} holds a run with other settings ({', '.join(changed)}); "
                "resume it with the same flags or choose another --out"
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, manifest)
    return manifest


def completed_iterations(run_dir: Path) -> int:
    """Iterations whose state is saved (the cookbook resumes after the last of them)."""
    path = run_dir / "checkpoints.jsonl"
    if not path.is_file():
        return 0
    done = 0
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if row.get("state_path") and isinstance(row.get("batch"), int):
                done = max(done, row["batch"])
    return done


INFRASTRUCTURE_LOG = "infrastructure_failures.jsonl"
_log_lock = threading.Lock()


def record_infrastructure_failure(run_dir: Path, task_id: str, phase: str = "train") -> None:
    """Count a check the sandbox could not run, apart from every score.

    The trainer drops that check's group from the update, or from the held-out
    metrics (`phase` "eval"): no reward exists for it. This line is where the
    run keeps it: the iteration it happened in (the one after the last saved),
    the task and the phase. One short line per append, under a lock, so
    concurrent checks never interleave.
    """
    row = {
        "iteration": completed_iterations(run_dir),
        "task": task_id,
        "phase": phase,
        "time": time.time(),
    }
    with _log_lock, (run_dir / INFRASTRUCTURE_LOG).open("a", encoding="utf-8") as sink:
        sink.write(json.dumps(row) + "\n")


def groups_needed(settings: TrainSettings) -> int:
    return settings.groups_per_batch * settings.iterations


def episode_bounds(settings: TrainSettings, turns: int) -> dict[str, Any]:
    """The manifest's `bounds` of a run whose episodes take at most `turns` policy turns."""
    return {
        "steps_per_episode": turns,
        "tool_calls_per_episode": turns if turns > 1 else 0,
        "tokens_per_turn": settings.max_tokens,
        "tokens_per_episode": settings.max_tokens * turns,
    }


def train(
    run_dir: Path,
    mode: str,
    settings: TrainSettings,
    tasks: list[dict[str, Any]],
    routes: dict[str, Callable[[dict[str, Any]], dict[str, Any]]],
    system_prompt: str,
    manifest: dict[str, Any],
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    job_extra: dict[str, Any] | None = None,
) -> Path:
    """Run the trainer to `settings.iterations` and write the summary; its path.

    `job_extra` adds mode-specific fields to the trainer's job (the shell tools, the
    evaluation-only `eval_tasks` and `eval_every`).
    """
    key = api_key()
    if completed_iterations(run_dir) >= settings.iterations:
        progress(settings.iterations, settings.iterations)
        say(f"{run_dir}: all {settings.iterations} iterations are done already")
        return summary.write(run_dir, manifest)
    env = managed_env.ensure(say)
    job = trainer_job(run_dir, mode, settings, tasks, system_prompt, job_extra)
    with ScoringService(routes) as service:
        job["scorer_url"] = service.url
        child_env = {
            **trainer_environment(settings.base_model, key),
            "ATOLL_SCORER_TOKEN": service.token,
        }
        log = run_dir / "trainer.log"
        with (
            log.open("ab") as sink,
            trainer_process(
                [str(env.python), str(managed_env.managed_script("train"))],
                child_env,
                sink,
                run_dir,
            ) as child,
        ):
            assert child.stdin is not None
            child.stdin.write(json.dumps(job).encode())
            child.stdin.close()
            while child.poll() is None:
                progress(completed_iterations(run_dir), settings.iterations)
                time.sleep(0.5)
        progress(completed_iterations(run_dir), settings.iterations)
        if service.errors:
            raise RunError(f"scoring failed: {service.errors[0]} (see {log})")
        if child.returncode == TRAINER_REFUSED:
            raise RunInputError(_refusal(log))
        if child.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-12:])
            raise RunError(f"the trainer exited with status {child.returncode}:\n{tail}")
    if completed_iterations(run_dir) < settings.iterations:
        raise RunError(f"the trainer stopped before iteration {settings.iterations} (see {log})")
    return summary.write(run_dir, manifest)


def trainer_job(
    run_dir: Path,
    mode: str,
    settings: TrainSettings,
    tasks: list[dict[str, Any]],
    system_prompt: str,
    job_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The job managed/train.py reads on stdin, less the scoring service's address.

    One function for every training command, so what a command hands its
    trainer can be rebuilt outside a run (the tests of the update's direction).
    """
    return {
        "mode": mode,
        "tasks": tasks,
        "run_dir": str(run_dir.resolve()),
        "base_model": settings.base_model,
        "renderer": settings.renderer,
        "base_url": settings.base_url,
        "lora_rank": settings.lora_rank,
        "learning_rate": settings.learning_rate,
        "groups_per_batch": settings.groups_per_batch,
        "group_size": settings.group_size,
        "iterations": settings.iterations,
        "max_tokens": settings.max_tokens,
        "load_checkpoint_path": settings.load_checkpoint,
        "max_submissions": MAX_SUBMISSIONS,
        "all_cases_bonus": ALL_CASES_BONUS,
        "system_prompt": system_prompt,
        **(job_extra or {}),
    }


# managed/train.py's REFUSED and REFUSAL_PREFIX: the trainer refused the run's settings
# before sampling anything (a bound that cannot hold a task's first turn).
TRAINER_REFUSED = 3
#: How long a trainer asked to stop may take to end (and its children) before SIGKILL.
TRAINER_STOP_GRACE_S = 20.0
_REFUSAL_PREFIX = "atoll-refusal: "


def _refusal(log: Path) -> str:
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if line.startswith(_REFUSAL_PREFIX):
            return line[len(_REFUSAL_PREFIX) :]
    return f"the trainer refused the run's settings (see {log})"


def trainer_environment(base_model: str, key: str) -> dict[str, str]:
    """The managed trainer's environment: the key, offline hub for a local model, no wandb."""
    child_env = {
        **os.environ,
        "TINKER_API_KEY": key,
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")
        if Path(base_model).is_dir()
        else os.environ.get("HF_HUB_OFFLINE", "0"),
        "WANDB_MODE": "disabled",
    }
    child_env.pop("VIRTUAL_ENV", None)
    return child_env


@contextlib.contextmanager
def trainer_process(
    argv: list[str], env: dict[str, str], sink: Any, cwd: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The trainer in its own process group, stopped with everything it started on the way out."""
    with process_group.Owner(TRAINER_STOP_GRACE_S) as owner:
        yield owner.spawn(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.STDOUT, env=env
        )
