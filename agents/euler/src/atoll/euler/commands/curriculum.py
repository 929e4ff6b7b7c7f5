"""`atoll euler curriculum`: strict numerical order, resumable rounds, a replay mix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from atoll.euler.commands.common import (
    API_KEY_ENV,
    APPROACHES,
    BASE_URL,
    IMAGE,
    MAX_TURNS,
    MODEL,
    RAY,
    REVISION,
    SYSTEM_PROMPT,
    THINKING,
    TIMEOUT,
    WORKERS,
    RunOptions,
    approach_list,
    console,
    fail,
    language_list,
    open_store,
    preflight,
    say,
)

if TYPE_CHECKING:  # imported when a command runs, to keep `atoll --help` quick
    from atoll.euler import curriculum_run
    from atoll.euler.curriculum import Config
    from atoll.euler.evaluate import Runner
    from atoll.euler.store import Store


def curriculum_command(
    model: str = MODEL,
    rounds: int = typer.Option(
        ..., "--rounds", min=1, help="Rounds to run now (a resumed round counts)."
    ),
    store: Path = typer.Option(..., "--store", help="The store made by `atoll euler import`."),
    state: Path = typer.Option(
        Path("euler-curriculum"), "--state", help="State directory (resumed if it exists)."
    ),
    base_url: str = BASE_URL,
    api_key_env: str = API_KEY_ENV,
    languages: str = typer.Option(
        "python", "--languages", help="Comma-separated: python, javascript."
    ),
    approaches: str = APPROACHES,
    samples: int = typer.Option(
        4, "--samples", min=1, help="Frontier attempts per language x approach in a round."
    ),
    threshold: float = typer.Option(
        0.5, "--threshold", help="Frontier pass fraction a round needs to pass."
    ),
    consecutive: int = typer.Option(
        2, "--consecutive", min=1, help="Consecutive passing rounds that master a problem."
    ),
    replay: str = typer.Option(
        "0.7,0.2,0.1",
        "--replay",
        help="Mix of current, recently mastered and older mastered attempts.",
    ),
    no_replay: bool = typer.Option(
        False, "--no-replay", help="Frontier attempts only (mix 1,0,0)."
    ),
    recent: int = typer.Option(
        3, "--recent", min=1, help="How many of the last mastered problems count as recent."
    ),
    start: int = typer.Option(
        1,
        "--start",
        min=1,
        help="First problem of a new curriculum; the ones before it are recorded as skipped, "
        "not mastered, unless rows under --state prove them.",
    ),
    workers: int = WORKERS,
    model_revision: str | None = REVISION,
    thinking: str | None = THINKING,
    system_prompt: Path | None = SYSTEM_PROMPT,
    max_turns: int = MAX_TURNS,
    timeout: float = TIMEOUT,
    image: str | None = IMAGE,
    ray: str | None = RAY,
) -> None:
    """Advance through problems in strict numerical order; resumable, with a replay mix.

    Exit status: 0 when the rounds ran, 3 when progression stopped at a
    problem with a missing statement, answer or resource, 1 when a round was
    left open by infrastructure errors.
    """
    from atoll.euler import curriculum
    from atoll.euler.evaluate import Runner, StoreSource

    mix = _replay_mix(replay, no_replay)
    opened = open_store(store)
    try:
        config = curriculum.Config(
            store_digest=opened.digest,
            languages=language_list(languages),
            approaches=approach_list(approaches),
            samples=samples,
            threshold=threshold,
            consecutive=consecutive,
            replay=mix,  # type: ignore[arg-type]  # Config names a mix of the wrong length
            recent=recent,
            start=start,
        )
    except curriculum.CurriculumError as exc:
        raise fail(str(exc)) from None
    settings = RunOptions(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        workers=workers,
        model_revision=model_revision,
        thinking=thinking,
        system_prompt=system_prompt,
        max_turns=max_turns,
        timeout=timeout,
        image=image,
        ray=ray,
    ).settings()
    runner = Runner(StoreSource(opened), settings, say=say)
    preflight(runner, config.languages)
    outcome = _run_rounds(state, opened, config, runner, rounds)
    _conclude(state, config, outcome)


def _replay_mix(replay: str, no_replay: bool) -> tuple[float, ...]:
    """The --replay fractions as numbers (the config checks that they are three and sum to 1)."""
    try:
        return (1.0, 0.0, 0.0) if no_replay else tuple(float(p) for p in replay.split(","))
    except ValueError:
        raise fail(f"--replay {replay!r}: three fractions like 0.7,0.2,0.1") from None


def _run_rounds(
    state: Path, opened: Store, config: Config, runner: Runner, rounds: int
) -> curriculum_run.Outcome:
    """Run `rounds` rounds; a refused state or an interruption is one error line."""
    from atoll.euler import curriculum, curriculum_run
    from atoll.euler.evaluate import Interrupted
    from atoll.euler.writer import RunDirInUse

    try:
        return curriculum_run.run(state, opened, config, runner, rounds, say)
    except (curriculum.CurriculumError, RunDirInUse) as exc:
        raise fail(str(exc)) from None
    except Interrupted:
        raise fail(
            "interrupted: the round's rows are kept; rerun the same command to resume it", 130
        ) from None


def _conclude(state: Path, config: Config, outcome: curriculum_run.Outcome) -> None:
    """Print where the curriculum stands; exit 1 on a round left open, 3 when progression stopped."""
    current = outcome.state
    console.print(
        f"curriculum {state}: current problem {current.current_problem}, mastered through "
        f"{current.mastered_through}, consecutive passing rounds {current.consecutive_passes}/"
        f"{config.consecutive}, rounds completed {current.rounds_completed}",
        markup=False,
    )
    if outcome.incomplete:
        raise fail(outcome.incomplete, 1)
    if outcome.stopped:
        raise fail(
            f"progression stopped at problem {current.current_problem}: {outcome.stopped}", 3
        )
