"""Driving the curriculum: plan a round, run it through the evaluator, apply it, repeat.

One process at a time owns a state directory (`atoll.euler.writer`). The state is
saved after a round is planned (the open round) and after it is applied, and
rows are appended as attempts finish, so a kill at any point resumes the
same round with nothing lost and nothing counted twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json
from atoll.euler import curriculum, report, rows, writer
from atoll.euler.curriculum import Config, State
from atoll.euler.evaluate import Runner, run_to_end
from atoll.euler.store import Store


@dataclass
class Outcome:
    state: State
    rounds_run: int
    stopped: str | None  # why progression stopped (a missing problem piece)
    incomplete: str | None  # a round left open by infrastructure errors


def run_id(number: int) -> str:
    return f"curriculum-r{number:04d}"


def run(
    state_dir: Path,
    store: Store,
    config: Config,
    runner: Runner,
    rounds: int,
    say: Callable[[str], None],
) -> Outcome:
    with writer.hold(state_dir, "atoll euler curriculum", "--state"):
        return _run(state_dir, store, config, runner, rounds, say)


def _run(
    state_dir: Path,
    store: Store,
    config: Config,
    runner: Runner,
    rounds: int,
    say: Callable[[str], None],
) -> Outcome:
    state = curriculum.load(state_dir)
    if state is None:
        found = sorted(state_dir.rglob(rows.ROWS_FILE))
        earlier = rows.read_all(found) if found else []
        proven = curriculum.proven_mastered(earlier, config, runner.settings.signature)
        state = State.new(config, proven)
        if state.skipped:
            say(
                f"starting at problem {config.start}: problems {_spans(state.skipped)} are "
                "recorded as skipped, not mastered (no rows prove them)"
            )
    else:
        curriculum.check_identity(state, config)
    signature = runner.settings.signature
    if curriculum.begin(state, signature):
        say(
            f"the model signature changed ({state.history[-1]['from'][:12]} -> {signature[:12]}): "
            f"consecutive passes reset from {state.history[-1]['consecutive_passes_reset_from']} to 0"
        )
    curriculum.save(state_dir, state)
    ran = 0
    while ran < rounds:
        plan_data = _open_plan(state_dir, state, store, say)
        if plan_data is None:
            assert state.stopped is not None
            return Outcome(state, ran, state.stopped["reason"], None)
        number = int(plan_data["round"])
        directory = curriculum.round_dir(state_dir, number)
        say(f"round {number}: problem {plan_data['problem']}; " + curriculum.mix_line(plan_data))
        rows_path = directory / rows.ROWS_FILE
        run_to_end(
            runner.run(curriculum.attempts_of(plan_data), directory, rows_path, run_id(number))
        )
        result, missing = curriculum.tally(plan_data, rows.read(rows_path))
        if missing:
            message = (
                f"round {number} has {len(missing)} attempts without a scored row (infrastructure "
                "errors); rerun the same command to retry them"
            )
            return Outcome(state, ran, None, message)
        entry = curriculum.complete_round(state, result)
        curriculum.save(state_dir, state)
        ran += 1
        verdict = "passed" if entry["passed"] else "did not pass"
        say(
            f"round {number} {verdict}: {result.passes}/{result.attempts} frontier attempts on problem "
            f"{result.problem} (threshold {config.threshold:.0%}); consecutive passing rounds "
            f"{state.consecutive_passes if not entry.get('mastered') else config.consecutive}"
            f"/{config.consecutive}"
            + (f"; problem {result.problem} mastered" if entry.get("mastered") else "")
        )
        _round_summary(directory, plan_data, entry)
    return Outcome(state, ran, None, None)


def _open_plan(
    state_dir: Path, state: State, store: Store, say: Callable[[str], None]
) -> dict[str, Any] | None:
    """The open round's plan (resumed), or a new one; None when progression stops."""
    if state.open_round is not None:
        path = curriculum.round_dir(state_dir, state.open_round) / curriculum.PLAN_FILE
        try:
            plan_data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            plan_data = None
        if (
            isinstance(plan_data, dict)
            and plan_data.get("model_signature") == state.model_signature
        ):
            say(f"resuming round {state.open_round}")
            return plan_data
        state.history.append(
            {
                "event": "round_abandoned",
                "round": state.open_round,
                "reason": "the model changed" if plan_data else "its plan is unreadable",
            }
        )
        state.open_round = None
    problem = state.current_problem
    why = store.missing(problem)
    if why is not None:
        if state.stopped is None or state.stopped.get("reason") != why:
            curriculum.stop(state, why)
        curriculum.save(state_dir, state)
        say(
            f"progression stops at problem {problem}: {why} (it is never skipped; fix the store and rerun)"
        )
        return None
    if state.stopped is not None:
        curriculum.resume_stopped(state)
    # Replay only what is still in the store.
    available = [n for n in state.mastered if store.missing(n) is None]
    kept_mastered, state.mastered = state.mastered, available
    number = _next_round(state_dir)
    plan_data = curriculum.plan(state, number)
    state.mastered = kept_mastered
    atomic_write_json(
        curriculum.round_dir(state_dir, number) / curriculum.PLAN_FILE, plan_data, make_parents=True
    )
    state.open_round = number
    curriculum.save(state_dir, state)
    return plan_data


def _next_round(state_dir: Path) -> int:
    rounds_dir = state_dir / "rounds"
    taken = (
        [int(p.name) for p in rounds_dir.iterdir() if p.name.isdigit()]
        if rounds_dir.is_dir()
        else []
    )
    return max(taken, default=0) + 1


def _round_summary(directory: Path, plan_data: dict[str, Any], entry: dict[str, Any]) -> None:
    data = rows.read(directory / rows.ROWS_FILE)
    verdict = (
        f"Round {entry['round']}: {entry['passes']}/{entry['attempts']} frontier attempts passed "
        f"on problem {entry['problem']} (threshold {entry['threshold']:.0%}): "
        + ("passed." if entry["passed"] else "did not pass.")
    )
    report.write(
        data,
        directory,
        title=f"Curriculum round {entry['round']}",
        notes=[verdict, curriculum.mix_line(plan_data)],
        ks=(1,),
    )


def _spans(numbers: list[int]) -> str:
    """`1-7, 9` for [1, 2, ..., 7, 9]."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
