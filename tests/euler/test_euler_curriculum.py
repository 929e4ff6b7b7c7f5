"""The curriculum state machine: transitions, thresholds, model change, replay, tallies, stops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from atoll.core.cli import main
from atoll.euler import curriculum, curriculum_run
from atoll.euler.curriculum import Config, CurriculumError, RoundResult, State
from atoll.euler.evaluate import Runner, Settings, StoreSource
from atoll.euler.store import Store


def config(**changes: Any) -> Config:
    values: dict[str, Any] = {
        "store_digest": "d",
        "languages": ("python",),
        "approaches": ("direct",),
        "samples": 4,
        "threshold": 0.5,
        "consecutive": 2,
    }
    values.update(changes)
    return Config(**values)


def result(state: State, passes: int, attempts: int = 4) -> RoundResult:
    return RoundResult(state.rounds_completed + 1, state.current_problem, attempts, passes, {})


def test_strict_order_thresholds_and_consecutive_rounds() -> None:
    state = State.new(config())
    curriculum.begin(state, "sig-a")
    assert (state.current_problem, state.mastered_through) == (1, 0)
    curriculum.complete_round(state, result(state, 2))  # 2/4 = 0.5 >= 0.5: passes
    assert (state.current_problem, state.consecutive_passes) == (1, 1)
    curriculum.complete_round(state, result(state, 1))  # 1/4 < 0.5: resets
    assert state.consecutive_passes == 0
    curriculum.complete_round(state, result(state, 3))
    entry = curriculum.complete_round(state, result(state, 4))
    assert entry["mastered"] is True
    assert (state.current_problem, state.mastered_through, state.consecutive_passes) == (2, 1, 0)
    assert state.mastered == [1]
    assert [e["event"] for e in state.history].count("round") == 4
    with pytest.raises(CurriculumError):  # a round of another problem cannot be applied
        curriculum.complete_round(state, RoundResult(9, 7, 4, 4, {}))


def test_a_round_without_scored_attempts_never_passes() -> None:
    state = State.new(config(consecutive=1))
    curriculum.complete_round(state, result(state, 0, attempts=0))
    assert state.current_problem == 1


def test_model_change_resets_consecutive_passes() -> None:
    state = State.new(config())
    assert curriculum.begin(state, "sig-a") is False
    curriculum.complete_round(state, result(state, 4))
    assert state.consecutive_passes == 1
    assert curriculum.begin(state, "sig-a") is False
    assert curriculum.begin(state, "sig-b") is True
    assert state.consecutive_passes == 0
    assert state.history[-1] == {
        "event": "model_change",
        "from": "sig-a",
        "to": "sig-b",
        "consecutive_passes_reset_from": 1,
        "problem": 1,
    }


def test_replay_mix_counts_and_plan() -> None:
    assert curriculum.replay_counts(4, (0.7, 0.2, 0.1), 1, 1) == (1, 1)
    assert curriculum.replay_counts(8, (0.7, 0.2, 0.1), 3, 2) == (2, 1)
    assert curriculum.replay_counts(4, (0.7, 0.2, 0.1), 0, 0) == (0, 0)  # nothing mastered yet
    assert curriculum.replay_counts(4, (1.0, 0.0, 0.0), 3, 3) == (0, 0)
    state = State.new(config(samples=7, recent=2))
    curriculum.begin(state, "s")
    state.mastered, state.current_problem, state.mastered_through = [1, 2, 3, 4], 5, 4
    plan = curriculum.plan(state, 3)
    assert plan["mix"]["counts"] == {"frontier": 7, "replay-recent": 2, "replay-older": 1}
    assert plan["mix"]["recent_pool"] == [3, 4] and plan["mix"]["older_pool"] == [1, 2]
    attempts = curriculum.attempts_of(plan)
    assert len({a.key() for a in attempts}) == len(attempts) == 10
    assert {a.problem for a in attempts if a.phase == "replay-recent"} <= {3, 4}
    assert {a.problem for a in attempts if a.phase == "replay-older"} <= {1, 2}
    assert curriculum.plan(state, 3) == plan  # decided once, reproducibly
    line = curriculum.mix_line(plan)
    assert line.startswith(
        "replay mix 70%/20%/10% configured; this round: frontier 7 (70%, problem 5)"
    )


def test_tally_counts_each_attempt_once_and_lists_the_rest() -> None:
    state = State.new(config(samples=3))
    curriculum.begin(state, "s")
    plan = curriculum.plan(state, 1)

    def row(sample: int, passed: bool, status: str = "scored") -> dict[str, Any]:
        return {
            "phase": "frontier",
            "problem": 1,
            "language": "python",
            "approach": "direct",
            "sample": sample,
            "status": status,
            "passed": passed,
        }

    rows = [row(0, True), row(0, True), row(1, False, "error"), row(1, True), row(7, True)]
    tallied, missing = curriculum.tally(plan, rows)
    assert (tallied.attempts, tallied.passes) == (2, 2)  # sample 0 once; sample 7 is not planned
    assert [a.sample for a in missing] == [2]


def test_config_validation_and_identity() -> None:
    with pytest.raises(CurriculumError):
        config(threshold=0)
    with pytest.raises(CurriculumError):
        config(replay=(0.5, 0.2, 0.1))
    state = State.new(config())
    curriculum.check_identity(state, config())
    with pytest.raises(CurriculumError, match="threshold"):
        curriculum.check_identity(state, config(threshold=0.75))


def test_state_round_trips(tmp_path: Path) -> None:
    state = State.new(config())
    curriculum.begin(state, "s")
    curriculum.complete_round(state, result(state, 4))
    curriculum.save(tmp_path, state)
    assert curriculum.load(tmp_path).to_json() == state.to_json()


def _runner(store: Store) -> Runner:
    from atoll.pi.settings import PiSettings

    pi = PiSettings(base_url="http://127.0.0.1:9/v1", model="m")
    return Runner(StoreSource(store), Settings(pi=pi, signature="sig"))


def test_missing_resource_stops_progression_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["euler", "import", "--sample", "--store", str(tmp_path / "s")]) == 0
    (tmp_path / "s" / "resources" / "digits.txt").unlink()
    store = Store(tmp_path / "s")
    state = State.new(config(start=8, store_digest=store.digest))
    curriculum.begin(state, "sig")
    curriculum.save(tmp_path / "state", state)
    said: list[str] = []
    outcome = curriculum_run.run(
        tmp_path / "state", store, state.config, _runner(store), 3, said.append
    )
    assert outcome.rounds_run == 0
    assert outcome.stopped == "problem 8 needs resource digits.txt, which is not in the store"
    assert "progression stops at problem 8" in said[-1] and "never skipped" in said[-1]
    saved = curriculum.load(tmp_path / "state")
    assert saved.current_problem == 8 and saved.stopped["problem"] == 8
    assert saved.history[-1]["event"] == "stopped"
    assert not (tmp_path / "state" / "rounds").exists()  # nothing ran, nothing planned


def test_a_missing_statement_stops_too(tmp_path: Path) -> None:
    assert main(["euler", "import", "--sample", "--store", str(tmp_path / "s")]) == 0
    (tmp_path / "s" / "problems" / "0001.txt").unlink()
    store = Store(tmp_path / "s")
    outcome = curriculum_run.run(
        tmp_path / "st",
        store,
        config(store_digest=store.digest),
        _runner(store),
        1,
        lambda _l: None,
    )
    assert outcome.stopped == "the statement of problem 1 is missing"


def test_problem_selection() -> None:
    from atoll.euler.evaluate import parse_problems

    assert parse_problems("1-3,7, 2") == [1, 2, 3, 7]
    for bad in ("0", "5-2", "x", "", "1-"):
        with pytest.raises(ValueError):
            parse_problems(bad)


def _frontier_row(problem: int, run_id: str, passed: bool, signature: str = "sig") -> dict:
    return {
        "status": "scored",
        "phase": "frontier",
        "problem": problem,
        "run_id": run_id,
        "passed": passed,
        "model_signature": signature,
    }


def test_start_records_earlier_problems_as_skipped_not_mastered() -> None:
    state = State.new(config(start=4))
    assert (state.current_problem, state.mastered_through) == (4, 0)
    assert state.skipped == [1, 2, 3] and state.mastered == []
    # nothing skipped is replayed as if it were mastered
    assert State.from_json(state.to_json()).skipped == [1, 2, 3]


def test_rows_that_prove_mastery_count_before_start() -> None:
    cfg = config(start=4, consecutive=2, threshold=0.5)
    rows = [
        # problem 1: two consecutive passing rounds under this signature: proven
        _frontier_row(1, "curriculum-r0001", True),
        _frontier_row(1, "curriculum-r0002", True),
        # problem 2: one passing round, one failing: not proven
        _frontier_row(2, "curriculum-r0003", True),
        _frontier_row(2, "curriculum-r0004", False),
        # problem 3: proven, but by another model: not proven for this one
        _frontier_row(3, "curriculum-r0005", True, signature="other"),
        _frontier_row(3, "curriculum-r0006", True, signature="other"),
    ]
    proven = curriculum.proven_mastered(rows, cfg, "sig")
    assert proven == {1}
    state = State.new(cfg, proven)
    assert state.mastered == [1] and state.mastered_through == 1 and state.skipped == [2, 3]


def test_mastering_after_a_skipped_start_does_not_claim_the_skipped_problems() -> None:
    state = State.new(config(start=3, consecutive=1))
    curriculum.begin(state, "sig")
    curriculum.complete_round(state, RoundResult(1, 3, 4, 4, {}))
    assert state.mastered == [3] and state.current_problem == 4
    assert state.mastered_through == 0 and state.skipped == [1, 2]
