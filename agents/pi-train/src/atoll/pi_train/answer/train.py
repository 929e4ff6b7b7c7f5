"""`atoll pi train answer`: its task sets (numerical order or a curriculum's replay mix), its
scoring route (the store's answer) and its run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.pi_train.answer import replay
from atoll.pi_train.answer.replay import ReplayError, ReplayMix
from atoll.pi_train.promotion import reserved
from atoll.pi_train.training import run, tasks, trained_on
from atoll.pi_train.training.run import RunInputError, TrainSettings
from atoll.pi_train.training.scoring import Handler


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
    promotion (atoll.pi_train.promotion.reserved): neither way draws them.
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
            run.episode_bounds(settings, 1),
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
    from atoll.pi_train.serving.serve import default_name

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
