"""The training task sets and the answer reward, without a Tinker server (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.pi_train_settings import train_settings

from atoll.euler import Store, sample_catalog, write_store
from atoll.pi_train.hidden.families import FAMILIES
from atoll.pi_train.training import run, tasks
from atoll.pi_train.training.run import RunError, TrainSettings


@pytest.mark.parametrize(
    "text",
    [
        "```python\nprint(sum(range(10)))\n```\nFINAL_ANSWER: 233168",
        "Derivation first.\n```py\nx = 1\n```\nThe program prints it.\nFINAL_ANSWER: 233,168\n",
        "```python\nprint(1)\n```\nFINAL_ANSWER: 5\nOn reflection:\nFINAL_ANSWER:  233168  ",
    ],
)
def test_answer_reward_gives_full_credit_to_a_correct_answer_with_code(text: str) -> None:
    reward, metrics = tasks.answer_reward(text, "233168", "python")
    assert reward == 1.0
    assert metrics["correct"] == 1.0 and metrics["code_format"] == 1.0


@pytest.mark.parametrize(
    ("text", "reward"),
    [
        ("FINAL_ANSWER: 233168", 0.9),  # right, but no code shown: the small penalty
        ("```javascript\nconsole.log(1)\n```\nFINAL_ANSWER: 233168", 0.9),  # not the language
        ("```python\nprint(1)\n```\nFINAL_ANSWER: 233169", 0.0),  # wrong
        ("```python\nprint(1)\n```\nThe answer is 233168.", 0.0),  # never stated as asked
        ("```python\nprint(233168)\n```", 0.0),
        ("", -0.1),
    ],
)
def test_answer_reward_withholds_credit(text: str, reward: float) -> None:
    assert tasks.answer_reward(text, "233168", "python")[0] == pytest.approx(reward)


def _store(root: Path, without: int | None = None) -> Store:
    catalog = sample_catalog()  # problems 1-10
    if without is not None:
        del catalog.problems[without]
    write_store(catalog, root)
    return Store(root)


def test_answer_tasks_take_problems_in_numerical_order(tmp_path: Path) -> None:
    chosen = tasks.answer_tasks(_store(tmp_path / "store"), ("python",), 7)
    assert [(t.number, t.strategy) for t in chosen] == [
        (1, "direct"), (1, "derive"), (2, "direct"), (2, "derive"),
        (3, "direct"), (3, "derive"), (4, "direct"),
    ]  # fmt: skip


def test_a_problem_missing_from_the_store_stops_answer_tasks_rather_than_being_skipped(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path / "store", without=4)
    assert [t.number for t in tasks.answer_tasks(store, ("python",), 6)] == [1, 1, 2, 2, 3, 3]
    with pytest.raises(tasks.TaskSetError) as caught:
        tasks.answer_tasks(store, ("python",), 8)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("problem 4 is not in the store: ")
    assert "6 of the 8 groups" in message


def test_a_missing_statement_stops_answer_tasks(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    (store.root / "problems" / "0002.txt").unlink()
    with pytest.raises(tasks.TaskSetError, match="^the statement of problem 2 is missing: "):
        tasks.answer_tasks(store, ("python",), 4)


def test_answer_tasks_never_wrap_back_to_problem_1(tmp_path: Path) -> None:
    """Past the last problem of the store the run stops; it never starts over at problem 1."""
    store = _store(tmp_path / "store")
    assert len(tasks.answer_tasks(store, ("python",), 20)) == 20
    with pytest.raises(tasks.TaskSetError, match="^problem 11 is not in the store: "):
        tasks.answer_tasks(store, ("python",), 21)


def test_hidden_tasks_come_in_a_fixed_order_that_longer_runs_extend() -> None:
    short = tasks.hidden_tasks(("python", "javascript"), 5)
    long = tasks.hidden_tasks(("python", "javascript"), 12)
    assert [t.id for t in long[:5]] == [t.id for t in short]
    assert len({t.id for t in long}) == 12
    assert all(t.instance.split == "train" for t in long)
    families = sorted(FAMILIES)
    assert [t.id for t in long[:4]] == [
        f"{families[0]}/train/0/python",
        f"{families[0]}/train/0/javascript",
        f"{families[1]}/train/0/python",
        f"{families[1]}/train/0/javascript",
    ]
    assert tasks.digest(short) == tasks.digest(tasks.hidden_tasks(("python", "javascript"), 5))
    assert tasks.digest(short) != tasks.digest(long[:4])


def test_hidden_task_prompts_carry_no_hidden_value() -> None:
    for task in tasks.hidden_tasks(("python", "javascript"), 8):
        public = json.dumps(task.public())
        for case in task.instance.cases:
            assert str(case.expected) not in public


def test_hidden_tasks_refuse_a_language_without_a_driver() -> None:
    with pytest.raises(tasks.TaskSetError, match="julia"):
        tasks.hidden_tasks(("python", "julia"), 2)


def _settings(**changes: object) -> TrainSettings:
    return train_settings(
        **{"base_model": "m", "group_size": 4, "iterations": 2, "max_tokens": 64, **changes}
    )


def test_a_run_directory_accepts_its_own_settings_and_more_iterations(tmp_path: Path) -> None:
    digest = {"digest": "0" * 64, "groups": 4}
    run.prepare_manifest(tmp_path, "atoll pi train hidden", _settings(), digest, {}, {})
    again = run.prepare_manifest(
        tmp_path,
        "atoll pi train hidden",
        _settings(iterations=5, base_url="http://127.0.0.1:2"),
        digest,
        {},
        {},
    )
    assert again["config"]["iterations"] == 5
    # Nothing trained yet (no saved state): other settings replace the old ones.
    replaced = run.prepare_manifest(
        tmp_path, "atoll pi train hidden", _settings(learning_rate=1e-3), digest, {}, {}
    )
    assert replaced["config"]["learning_rate"] == 1e-3
    # Once a state is saved, other settings are refused rather than mixed in.
    (tmp_path / "checkpoints.jsonl").write_text(
        '{"batch": 1, "state_path": "tinker://r/weights/1"}\n'
    )
    with pytest.raises(RunError, match="learning_rate"):
        run.prepare_manifest(
            tmp_path, "atoll pi train hidden", _settings(learning_rate=2e-3), digest, {}, {}
        )


def test_completed_iterations_reads_the_saved_states(tmp_path: Path) -> None:
    assert run.completed_iterations(tmp_path) == 0
    rows = [
        {"name": "000001", "batch": 1, "state_path": "tinker://a/1"},
        {"name": "000002", "batch": 2, "sampler_path": "tinker://a/s2"},  # no state: not resumable
        "not json",
    ]
    (tmp_path / "checkpoints.jsonl").write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    )
    assert run.completed_iterations(tmp_path) == 1
