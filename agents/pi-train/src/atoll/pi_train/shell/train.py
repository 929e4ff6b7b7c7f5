"""`atoll pi train shell`: the design's `train_pi_grpo`, file/shell RL with Pi's four tools.

One GRPO group per task (family, train instance, language), in a seeded
order mixing families and languages in every batch (atoll.pi_train.training.batches).
Each trajectory gets a fresh workspace (an `Episode`, held here in the
atoll process with the answer); the trainer process only relays tool calls
and the final response over the run's loopback scoring service, so answers
never reach it. Languages follow a schedule: Julia weighted 3x against
Python and JavaScript where the sandbox runs Julia (ours does not: it is then
left out, and said so), held-out evaluation balanced over families and
languages. Every trajectory's reward components go to `trajectories.jsonl`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_text
from atoll.pi_train.shell.episode import (
    RUNTIMES,
    TOOL_NAMES,
    TOOL_SPECS,
    Bounds,
    Episode,
    InfrastructureFailure,
    Runner,
    fusion_runner,
)
from atoll.pi_train.shell.families import FAMILIES, GENERATOR_VERSION, ShellInstance
from atoll.pi_train.shell.reward import score, weights
from atoll.pi_train.training import batches, preflight, run, trained_on
from atoll.pi_train.training.held_out import HeldOut
from atoll.pi_train.training.held_out import job_fields as held_out_job
from atoll.pi_train.training.held_out import record as held_out_record
from atoll.pi_train.training.run import RunError, RunInputError, TrainSettings

COMMAND = "atoll pi train shell"
# Training weight per language where the sandbox runs it (the design: Julia 3x).
LANGUAGE_WEIGHTS = {"julia": 3, "python": 1, "javascript": 1}
DEFAULT_LANGUAGES = ("julia", "python", "javascript")
TRAJECTORIES = "trajectories.jsonl"
_LANGUAGE_NAMES = {"python": "Python", "javascript": "JavaScript", "julia": "Julia"}
_PROBES = {"python": "print(1)\n", "javascript": "console.log(1)\n", "julia": "println(1)\n"}

SYSTEM_PROMPT = (
    "You work in a workspace through four tools: read (a file), write (a file), edit (exact "
    "text replacement in a file) and bash (run a command). Only the program file the task "
    "names may be written or edited, and bash runs only that program with its runtime. Use "
    "relative paths. Read the data, write the program, run it, fix it until its output is "
    "right, then give the answer in your final reply."
)
SUMMARY_COLUMNS = [
    ["reward", "env/all/reward/total"],
    ["mutation", "env/all/mutation"],
    ["execution", "env/all/execution"],
    ["exact output", "env/all/exact_output"],
    ["answer", "env/all/answer"],
    ["conjunction", "env/all/conjunction"],
    ["tool calls", "env/all/tool_calls"],
    ["seconds", "time/total"],
]


@dataclass(frozen=True)
class ShellTask:
    id: str
    instance: ShellInstance
    language: str

    def prompt(self) -> str:
        runtime = RUNTIMES[self.language]
        files = ", ".join(f"`{n}` ({len(d)} bytes)" for n, d in sorted(self.instance.files.items()))
        return (
            f"{self.instance.statement}\n\n"
            f"The workspace holds {files}. Write a {_LANGUAGE_NAMES[self.language]} program at "
            f"`{runtime.program}` that reads the files and prints the answer as the last line of "
            f"its output. Run it with `{runtime.command}` (the only command bash runs here), fix "
            "it until it is right, then state the answer in your final reply."
        )

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt(),
            "tags": [self.instance.family, self.language],
        }


def schedule(languages: tuple[str, ...]) -> list[str]:
    """The training cycle of languages: each repeated by its weight (Julia 3x)."""
    return [lang for lang in languages for _ in range(LANGUAGE_WEIGHTS.get(lang, 1))]


def train_tasks(
    languages: tuple[str, ...], count: int, per_batch: int = 2, seed: int = 0
) -> list[ShellTask]:
    """`count` groups from the train namespace, batches of `per_batch` mixed from `seed`.

    Every batch draws across families and languages, languages at the
    schedule's weights (atoll.pi_train.training.batches); a family's n-th group takes its
    train instance n, so no instance is met twice, and a longer run starts with
    a shorter run's groups.
    """
    weights = {lang: LANGUAGE_WEIGHTS.get(lang, 1) for lang in languages}
    return [
        ShellTask(
            f"{slot.family}/train/{slot.family_index}/{slot.language}",
            FAMILIES[slot.family].instance("train", slot.family_index),
            slot.language,
        )
        for slot in batches.mix(sorted(FAMILIES), languages, per_batch, count, seed, weights)
    ]


def eval_tasks(languages: tuple[str, ...], per_cell: int) -> list[ShellTask]:
    """Held-out tasks, balanced: `per_cell` eval instances of every family in every language."""
    return [
        ShellTask(
            f"{family}/eval/{index}/{language}", FAMILIES[family].instance("eval", index), language
        )
        for index in range(per_cell)
        for family in sorted(FAMILIES)
        for language in languages
    ]


def digest(tasks: list[ShellTask]) -> str:
    """sha256 over every task's id, prompt, tags and whole instance (its answer included)."""
    h = hashlib.sha256()
    for task in tasks:
        h.update(json.dumps({**task.public(), "instance": task.instance.digest()}).encode() + b"\n")
    return h.hexdigest()


def available_languages(
    languages: tuple[str, ...], runner: Runner
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The requested languages the sandbox runs, and why each other one is left out.

    Each is probed with a one-line program. A language whose probe fails while
    another's works is one the sandbox does not serve (Julia here); when none
    works the sandbox itself is down, which is an error, not a schedule.
    """
    found: list[str] = []
    missing: dict[str, str] = {}
    for language in languages:
        runtime = RUNTIMES[language]
        try:
            result = runner(runtime, {runtime.program: _PROBES[language].encode()}, 10.0)
        except InfrastructureFailure:
            missing[language] = "the sandbox does not run it"
            continue
        if result.exit_code == 0 and result.stdout.strip() == "1":
            found.append(language)
        else:
            missing[language] = f"its probe exited {result.exit_code}"
    if not found:
        raise RunError(
            "the sandbox ran none of the languages "
            f"({', '.join(f'{k}: {v}' for k, v in missing.items())})"
        )
    return tuple(found), missing


class EpisodeStore:
    """The live episodes of a run and the per-trajectory log, shared by the service's threads."""

    def __init__(
        self, run_dir: Path, tasks: dict[str, ShellTask], runner: Runner, bounds: Bounds
    ) -> None:
        self.run_dir, self.tasks, self.runner, self.bounds = run_dir, tasks, runner, bounds
        self._episodes: dict[str, tuple[ShellTask, str, Episode]] = {}
        self._lock = threading.Lock()

    def routes(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        """The scoring service's routes the trainer's ShellEnv calls (managed/shell_episode.py)."""
        return {"/shell/start": self.start, "/shell/tool": self.tool, "/shell/finish": self.finish}

    def start(self, body: dict[str, Any]) -> dict[str, Any]:
        task = self.tasks[str(body["task"])]
        episode = Episode(
            RUNTIMES[task.language], dict(task.instance.files), self.runner, self.bounds
        )
        key = secrets.token_hex(8)
        with self._lock:
            self._episodes[key] = (task, str(body.get("phase", "train")), episode)
        return {"episode": key}

    def tool(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            task, phase, episode = self._episodes[str(body["episode"])]
        try:
            content = episode.call(
                str(body["name"]), body.get("arguments"), str(body.get("id", ""))
            )
        except InfrastructureFailure:
            with self._lock:
                self._episodes.pop(str(body["episode"]), None)
            run.record_infrastructure_failure(self.run_dir, task.id, phase)
            return {"infrastructure": True}
        return {"content": content, "budget_left": episode.budget_left}

    def finish(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            task, phase, episode = self._episodes.pop(str(body["episode"]))
        outcome = score(episode, str(body.get("text", "")), str(task.instance.answer))
        row = {
            "iteration": run.completed_iterations(self.run_dir),
            "phase": phase,
            "task": task.id,
            "family": task.instance.family,
            "language": task.language,
            **outcome.to_json(),
            "turns": int(body.get("turns", 0)),
            "end": str(body.get("end", "")),
            "tool_calls": episode.tool_calls,
            "refused_calls": episode.refused,
            "mutations": episode.mutations,
            "runs": len(episode.executions),
            "audit_hits": episode.audit_hits,
            "time": time.time(),
        }
        with self._lock, (self.run_dir / TRAJECTORIES).open("a", encoding="utf-8") as sink:
            sink.write(json.dumps(row) + "\n")
        metrics = {
            **outcome.metrics(),
            "tool_calls": float(episode.tool_calls),
            "refused_calls": float(episode.refused),
            "runs": float(len(episode.executions)),
        }
        return {"reward": outcome.reward, "metrics": metrics}


def drop_unfinished_trajectories(run_dir: Path) -> None:
    """Keep only the rows of saved iterations: a resumed run samples the rest again."""
    path = run_dir / TRAJECTORIES
    if not path.is_file():
        return
    done = run.completed_iterations(run_dir)
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            if int(json.loads(line)["iteration"]) < done:
                kept.append(line + "\n")
    atomic_write_text(path, "".join(kept))


@dataclass(frozen=True)
class ShellOptions:
    """What `shell` adds to the common training settings."""

    sandbox_url: str | None
    bounds: Bounds
    eval_instances: int  # per family x language; 0: no held-out evaluation
    eval_every: int
    eval_samples: int = 1  # episodes per held-out task: pass@k for k up to this
    batch_seed: int = 0


def train_shell(
    settings: TrainSettings,
    out: Path,
    options: ShellOptions,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    load_from: str | None = None,
) -> Path:
    """GRPO over Pi-shaped file tasks, runs in a SandboxFusion-compatible sandbox.

    `load_from` is `--load-checkpoint` as given: where the run's lineage is read from.
    """
    from atoll.core.sandbox.fusion import NotLoopbackError, require_loopback_url

    run.api_key()  # before anything is written: a run without a key never starts
    unknown = sorted(set(settings.languages) - set(RUNTIMES))
    if unknown:
        raise RunInputError(
            f"shell tasks have no language {', '.join(unknown)}; choose from {', '.join(RUNTIMES)}"
        )
    if options.sandbox_url is not None:
        try:
            require_loopback_url(options.sandbox_url)
        except NotLoopbackError as exc:
            raise RunInputError(str(exc)) from None
    with contextlib.ExitStack() as stack:
        run.hold_run_dir(stack, out, COMMAND)
        lineage = trained_on.started_from(load_from, settings.load_checkpoint)
        return _shell_run(settings, out, options, progress, say, stack, lineage)


def _shell_run(
    settings: TrainSettings,
    out: Path,
    options: ShellOptions,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    stack: contextlib.ExitStack[Any],
    lineage: dict[str, Any] | None = None,
) -> Path:
    from atoll.core.sandbox.fusion import EmbeddedFusionServer
    from atoll.euler import SUITE_DIGEST, SUITE_NAME

    url = options.sandbox_url or stack.enter_context(EmbeddedFusionServer()).url
    runner = fusion_runner(url)
    languages, missing = available_languages(settings.languages, runner)
    for language, why in missing.items():
        say(f"{language}: left out of the schedule ({why}); training on {', '.join(languages)}")
    # Before anything is written or any Tinker client exists: every reference must score full.
    checked = preflight.check_shell(languages, runner, options.bounds)
    preflight.require_full(checked)
    per, seed = settings.groups_per_batch, options.batch_seed
    train = train_tasks(languages, run.groups_needed(settings), per, seed)
    held_out = eval_tasks(languages, options.eval_instances)
    evaluation = HeldOut(options.eval_instances, options.eval_samples, options.eval_every)
    language_weights = {k: LANGUAGE_WEIGHTS.get(k, 1) for k in languages}
    bounds = options.bounds
    manifest = run.prepare_manifest(
        out,
        COMMAND,
        settings,
        {"digest": digest(train), "groups": len(train), "eval_digest": digest(held_out)},
        {
            "steps_per_episode": bounds.steps,
            "tool_calls_per_episode": bounds.tool_calls,
            "tokens_per_turn": settings.max_tokens,
            "tokens_per_episode": bounds.episode_tokens,
            "read_chars": bounds.read_chars,
            "stdout_chars": bounds.stdout_chars,
            "stderr_chars": bounds.stderr_chars,
            "run_timeout_s": bounds.run_timeout_s,
            "program_bytes": bounds.program_bytes,
        },
        {
            "namespaces": {"train": "train", "held_out": "eval", "generator": GENERATOR_VERSION},
            "families": sorted(FAMILIES),
            "transfer_suite": {
                "name": SUITE_NAME,
                "digest": SUITE_DIGEST,
                "disjointness": "instances: the suite's questions are never drawn",
            },
            "languages": {
                "trained": list(languages),
                "left_out": missing,
                "weights": language_weights,
                "schedule": schedule(languages),
            },
            "evaluation": held_out_record(evaluation, len(held_out)),
            "batches": batches.record(seed, per, sorted(FAMILIES), languages, language_weights),
            "tools": list(TOOL_NAMES),
            "reward": weights(),
            "sandbox": "given" if options.sandbox_url else "embedded",
            "summary_columns": SUMMARY_COLUMNS,
        },
        trained=trained_on.shell_record(train, held_out),
        started_from=lineage,
    )
    preflight.record(out, COMMAND, manifest["sandbox"], checked, say)
    drop_unfinished_trajectories(out)
    store = EpisodeStore(out, {t.id: t for t in [*train, *held_out]}, runner, bounds)
    return run.train(
        out,
        "shell",
        settings,
        [t.public() for t in train],
        store.routes(),
        SYSTEM_PROMPT,
        manifest,
        progress,
        say,
        job_extra=job_extra(bounds, held_out, evaluation),
    )


def job_extra(bounds: Bounds, held_out: list[ShellTask], evaluation: HeldOut) -> dict[str, Any]:
    """What `shell` adds to the trainer's job: Pi's tool schemas, the episode's bounds and
    the held-out tasks the cookbook evaluates (how often and how many samples: `evaluation`)."""
    return {
        "shell_tools": TOOL_SPECS,
        "bounds": asdict(bounds),
        **held_out_job([t.public() for t in held_out], evaluation),
    }
