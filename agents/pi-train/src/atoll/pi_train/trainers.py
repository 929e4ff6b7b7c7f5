"""`atoll pi train hidden` and `atoll pi train answer`: their task sets, scoring routes, runs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.pi_train import held_out, hidden_sets, replay, reserved, run, tasks, trained_on
from atoll.pi_train.held_out import HeldOut
from atoll.pi_train.replay import ReplayError, ReplayMix
from atoll.pi_train.run import MAX_SUBMISSIONS, RunInputError, TrainSettings
from atoll.pi_train.scoring import Handler


def _bounds(settings: TrainSettings, turns: int) -> dict[str, Any]:
    return {
        "steps_per_episode": turns,
        "tool_calls_per_episode": turns if turns > 1 else 0,
        "tokens_per_turn": settings.max_tokens,
        "tokens_per_episode": settings.max_tokens * turns,
    }


def train_hidden(
    settings: TrainSettings,
    out: Path,
    sandbox_url: str | None,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    load_from: str | None = None,
    evaluation: HeldOut | None = None,
    batch_seed: int = 0,
) -> Path:
    """GRPO over hidden-variant groups, checked in a SandboxFusion-compatible sandbox.

    `load_from` is `--load-checkpoint` as given (a run directory or a state): where
    the run's lineage is read from (atoll.pi_train.trained_on). Batches mix families
    and languages from `batch_seed`; `evaluation` is the held-out set of the `eval`
    namespace and how often it is evaluated (atoll.pi_train.hidden_sets, held_out).
    """
    from atoll.core.sandbox.fusion import NotLoopbackError, require_loopback_url

    run.api_key()  # before anything is written: a run without a key never starts
    if sandbox_url is not None:
        try:
            require_loopback_url(sandbox_url)
        except NotLoopbackError as exc:
            raise RunInputError(str(exc)) from None
    sets = _hidden_sets(settings, evaluation or HeldOut(), batch_seed)
    with contextlib.ExitStack() as stack:
        run.hold_run_dir(stack, out, "atoll pi train hidden")
        lineage = trained_on.started_from(load_from, settings.load_checkpoint)
        return _hidden_run(settings, out, sandbox_url, sets, progress, say, stack, lineage)


@dataclass(frozen=True)
class _HiddenSets:
    train: list[tasks.HiddenTask]
    held_out: list[tasks.HiddenTask]
    evaluation: HeldOut
    batches: dict[str, Any]


def _hidden_sets(settings: TrainSettings, evaluation: HeldOut, seed: int) -> _HiddenSets:
    """The mixed training groups and the held-out ones (none with `--eval-instances 0`)."""
    why = evaluation.check()
    if why is not None:
        raise RunInputError(why)
    per = settings.groups_per_batch
    return _HiddenSets(
        hidden_sets.train_tasks(settings.languages, per, run.groups_needed(settings), seed),
        hidden_sets.eval_tasks(settings.languages, evaluation.instances),
        evaluation,
        hidden_sets.batches_record(settings.languages, per, seed),
    )


def _hidden_run(
    settings: TrainSettings,
    out: Path,
    sandbox_url: str | None,
    sets: _HiddenSets,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    stack: contextlib.ExitStack[Any],
    lineage: dict[str, Any] | None,
) -> Path:
    """The hidden run itself, inside the run-directory lock `stack` holds."""
    from atoll.core.sandbox.fusion import EmbeddedFusionServer
    from atoll.pi_train import preflight
    from atoll.pi_train.families import GENERATOR_VERSION

    task_list = sets.train
    url = sandbox_url or stack.enter_context(EmbeddedFusionServer()).url
    # Before anything is written or any Tinker client exists: every reference must score full.
    checked = preflight.check_hidden(settings.languages, url)
    preflight.require_full(checked)
    manifest = run.prepare_manifest(
        out,
        "atoll pi train hidden",
        settings,
        {
            "digest": tasks.digest(task_list),
            "groups": len(task_list),
            "eval_digest": tasks.digest(sets.held_out),
        },
        {**_bounds(settings, MAX_SUBMISSIONS), "trajectory_tokens": run.MAX_TRAJECTORY_TOKENS},
        {
            "namespaces": {"train": "train", "held_out": "eval", "generator": GENERATOR_VERSION},
            "reward": {
                "coverage": "passed/total",
                "all_cases_bonus": run.ALL_CASES_BONUS,
                "context_overflow": run.CONTEXT_OVERFLOW_REWARD,
            },
            "sandbox": "given" if sandbox_url else "embedded",
            "batches": sets.batches,
            "evaluation": held_out.record(sets.evaluation, len(sets.held_out)),
        },
        trained=trained_on.hidden_record(task_list, sets.held_out),
        started_from=lineage,
    )
    preflight.record(out, "atoll pi train hidden", manifest["sandbox"], checked, say)
    return run.train(
        out,
        "hidden",
        settings,
        [t.public() for t in task_list],
        hidden_routes(out, task_list, sets.held_out, url),
        tasks.HIDDEN_SYSTEM_PROMPT,
        manifest,
        progress,
        say,
        hidden_job_extra(sets.held_out, sets.evaluation),
    )


def hidden_job_extra(held_out_tasks: list[tasks.HiddenTask], evaluation: HeldOut) -> dict[str, Any]:
    """What `hidden` adds to the trainer's job: the episode's token bound, what an episode
    past it earns, and the held-out tasks the cookbook evaluates."""
    return {
        "max_trajectory_tokens": run.MAX_TRAJECTORY_TOKENS,
        "context_overflow_reward": run.CONTEXT_OVERFLOW_REWARD,
        **held_out.job_fields([t.public() for t in held_out_tasks], evaluation),
    }


def train_answer(
    settings: TrainSettings,
    out: Path,
    store_dir: Path,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    curriculum: Path | None = None,
    mix: ReplayMix | None = None,
    load_from: str | None = None,
) -> Path:
    """GRPO on the Euler store: exact answer with a small code-format penalty.

    With `curriculum` (an `atoll euler curriculum` state directory), groups
    come from its frontier and mastered problems in the replay mixture, and
    its regression window is evaluated without gradients; without it,
    problems are taken in numerical order. Problems 91-100 are reserved for
    promotion (atoll.pi_train.reserved): neither way draws them.
    """
    from atoll.pi_train.euler_source import CurriculumError, StoreError

    run.api_key()
    try:
        store = tasks.store_at(store_dir)
        if curriculum is None:
            task_list = tasks.answer_tasks(store, settings.languages, run.groups_needed(settings))
            held_out: list[tasks.AnswerTask] = []
            replay_record: dict[str, Any] | None = None
        else:
            task_list, held_out, replay_record = curriculum_tasks(
                store, curriculum, settings, mix or ReplayMix()
            )
    except (StoreError, CurriculumError, ReplayError) as exc:
        raise RunInputError(str(exc)) from None
    with contextlib.ExitStack() as stack:
        run.hold_run_dir(stack, out, "atoll pi train answer")
        manifest = run.prepare_manifest(
            out,
            "atoll pi train answer",
            settings,
            {"digest": tasks.digest(task_list), "groups": len(task_list), "store": store.digest},
            _bounds(settings, 1),
            {
                "strategies": sorted(tasks.STRATEGIES),
                "reward": {"correct": 1.0, "code_format_penalty": tasks.CODE_FORMAT_PENALTY},
                **({"replay": replay_record} if replay_record else {}),
                "reserved_for_promotion": reserved.PROMOTION_RANGE,
            },
            trained=trained_on.answer_record(task_list, held_out),
            started_from=trained_on.started_from(load_from, settings.load_checkpoint, store),
        )
        for line in replay.report_lines(manifest, []):
            if line:
                say(line)
        job_extra = regression_job(held_out, replay_record)
        return run.train(
            out,
            "answer",
            settings,
            [t.public() for t in task_list],
            answer_routes(store, [*task_list, *held_out]),
            tasks.ANSWER_SYSTEM_PROMPT,
            manifest,
            progress,
            say,
            job_extra,
        )


def hidden_routes(
    out: Path,
    task_list: list[tasks.HiddenTask],
    held_out_tasks: list[tasks.HiddenTask],
    sandbox_url: str,
) -> dict[str, Handler]:
    """`hidden`'s scoring route: `/check` runs a submission on its task's hidden cases.

    The trainer gets counts only; a check the sandbox could not run is logged
    in the run directory with its phase (a training group leaves the update,
    a held-out one leaves the evaluation).
    """
    from atoll.pi_train.harness import check_submission

    by_id = {t.id: t for t in [*task_list, *held_out_tasks]}
    held_out_ids = {t.id for t in held_out_tasks}

    def check(body: dict[str, Any]) -> dict[str, Any]:
        task = by_id[body["task"]]
        result = check_submission(str(body["code"]), task.language, task.instance, sandbox_url)
        if result.failure == "infrastructure":
            phase = "eval" if task.id in held_out_ids else "train"
            run.record_infrastructure_failure(out, task.id, phase)
        return {"passed": result.passed, "total": result.total, "failure": result.failure}

    return {"/check": check}


def answer_routes(store: Any, task_list: list[tasks.AnswerTask]) -> dict[str, Handler]:
    """`answer`'s scoring route: `/reward` scores a response against the store's answer."""
    by_id = {t.id: t for t in task_list}

    def reward(body: dict[str, Any]) -> dict[str, Any]:
        task = by_id[body["task"]]
        value, metrics = tasks.answer_reward(
            str(body["text"]), store.expected(task.number), task.language
        )
        return {"reward": value, "metrics": metrics}

    return {"/reward": reward}


def regression_job(
    held_out: list[tasks.AnswerTask], replay_record: dict[str, Any] | None
) -> dict[str, Any]:
    """The trainer job's evaluation fields for the regression window (none without one):
    its tasks, how often, and how many samples of each (the window's `group_size`)."""
    if not held_out or replay_record is None:
        return {}
    window = replay_record["regression_window"]
    return {
        "eval_tasks": [t.public() for t in held_out],
        "eval_every": window["every_iterations"],
        "eval_group_size": window["group_size"],
    }


def check_model(state_dir: Path, signature: str, settings: TrainSettings) -> None:
    """Refuse a curriculum that measured another model than the one this run trains.

    Its frontier and mastered list hold for the model signature it was run
    under (atoll-euler counts no row of another signature as proof), so, as
    `atoll euler curriculum` refuses a state started with other settings, the
    run is refused when the curriculum's model (its rows: the served name and
    the checkpoint, `model_revision`) is not the base model (as `atoll tinker
    serve` names it) at the state the run starts from (`--load-checkpoint`, or
    none: the base model).
    """
    from atoll.pi_train.euler_source import CurriculumError, measured_models
    from atoll.pi_train.serve import default_name

    measured = measured_models(state_dir, signature)
    name = default_name(settings.base_model)
    trained = f"{name} from {settings.load_checkpoint or 'the base model'}"
    if not measured:
        raise CurriculumError(
            f"the curriculum in {state_dir} records model signature {signature[:12]} but none "
            f"of its rows says which model that is, so it cannot be checked against {trained}; "
            "run a round of `atoll euler curriculum` on the model to train"
        )
    if any(
        model == name and _same_checkpoint(revision, settings.load_checkpoint)
        for model, revision in measured
    ):
        return
    model, revision = sorted(measured, key=str)[0]
    raise CurriculumError(
        f"the curriculum in {state_dir} measured another model (signature {signature[:12]}: "
        f"{model} at {revision or 'the base model'}) than this run trains ({trained}); train "
        "the model it measured or run `atoll euler curriculum` on this one"
    )


def _same_checkpoint(revision: str | None, state: str | None) -> bool:
    """Whether a measured revision is the training state a run starts from: both the base
    model (None), the state path itself, or the sampler checkpoint saved with it
    (`tinker://RUN/sampler_weights/NAME` beside `tinker://RUN/weights/NAME`)."""
    if revision is None or state is None:
        return revision == state
    return revision in (state, state.replace("/weights/", "/sampler_weights/", 1))


def curriculum_tasks(
    store: Any, state_dir: Path, settings: TrainSettings, mix: ReplayMix
) -> tuple[list[tasks.AnswerTask], list[tasks.AnswerTask], dict[str, Any]]:
    """(training groups in order, evaluation-only regression groups, the replay record)."""
    from atoll.pi_train.euler_source import CurriculumError, load_curriculum

    state = load_curriculum(state_dir)
    if state is None:
        raise CurriculumError(
            f"{state_dir} holds no curriculum state (state.json); "
            "run `atoll euler curriculum --state DIR` first"
        )
    if state.config.store_digest != store.digest:
        raise CurriculumError(
            f"the curriculum in {state_dir} was run on another store than {store.root}; "
            "name the store it used"
        )
    if state.model_signature is not None:
        check_model(state_dir, state.model_signature, settings)
    tasks.check_euler_languages(settings.languages)
    conditions = [(lang, strategy) for lang in settings.languages for strategy in tasks.STRATEGIES]
    if reserved.is_reserved(state.current_problem):
        raise ReplayError(
            f"the curriculum in {state_dir} is at problem {state.current_problem}, one of "
            f"{reserved.PROMOTION_RANGE}, which are reserved for promotion: no training command "
            "draws from them"
        )
    # Mastered problems in the reserved range were evaluated, never trained: they stay so.
    everything = [int(n) for n in state.mastered]
    mastered = reserved.outside(everything)
    seed = f"{store.digest}:{state.current_problem}:{','.join(map(str, mastered))}"
    chosen = replay.plan(
        state.current_problem, mastered, conditions, run.groups_needed(settings), mix, seed
    )
    training = [
        tasks.answer_task(store, s.problem, s.language, s.strategy, (s.source, f"p{s.problem}"))
        for s in chosen.slots
    ]
    held_out = [
        tasks.answer_task(store, n, lang, strategy, (replay.REGRESSION_TAG, f"p{n}"))
        for n in chosen.regression
        for lang, strategy in conditions
    ]
    record = {
        **chosen.describe(settings.group_size),
        "curriculum": {
            "state": str(state_dir.resolve()),
            "current_problem": state.current_problem,
            "mastered": mastered,
            "model_signature": state.model_signature,
            "reserved_left_out": reserved.reserved_among(everything),
        },
    }
    return training, held_out, record
