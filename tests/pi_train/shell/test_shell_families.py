"""The shell task families: deterministic, train and eval disjoint, and apart from the transfer suite.

The transfer suite is atoll-euler's installed, digest-verified
`atoll-transfer-v1`: its four tasks are one of each family, so these tests
prove that no training or held-out instance is one of them, shares a file,
a line of data or an answer with them, and that the families' own solvers
do describe the suite's tasks (so "not the suite's question" means something).
"""

from __future__ import annotations

import pytest

from atoll.euler.transfer import suite
from atoll.pi_train.shell.families import (
    FAMILIES,
    SPLITS,
    SUITE_ANSWERS,
    SUITE_POINTS,
    params_key,
    question_split,
)
from atoll.pi_train.shell.train import eval_tasks, schedule, train_tasks

WALK = 30  # instances per family and split


@pytest.fixture(scope="module")
def instances() -> dict[str, dict[str, list]]:
    return {
        name: {split: [family.instance(split, i) for i in range(WALK)] for split in SPLITS}
        for name, family in FAMILIES.items()
    }


@pytest.fixture(scope="module")
def transfer() -> dict[str, suite.TransferTask]:
    return suite.verified()  # refuses a suite that does not reproduce its pinned digest


def test_instances_are_deterministic(instances: dict) -> None:
    for name, family in FAMILIES.items():
        for split in SPLITS:
            for index in (0, 7, WALK - 1):
                again = family.instance(split, index)
                assert again == instances[name][split][index]
                assert again.digest() == instances[name][split][index].digest()


def test_each_answer_is_its_solver_on_its_files(instances: dict) -> None:
    for name, family in FAMILIES.items():
        for instance in instances[name]["train"][:10]:
            assert family.solve(instance.params, instance.files) == instance.answer != 0
            assert set(instance.files) and all(instance.files.values())


def test_train_and_eval_share_no_question_and_no_instance(instances: dict) -> None:
    for name in FAMILIES:
        questions = {
            split: {params_key(name, i.params) for i in instances[name][split]} for split in SPLITS
        }
        assert questions["train"] and questions["eval"]
        assert not questions["train"] & questions["eval"], name
        for split in SPLITS:
            assert all(question_split(name, i.params) == split for i in instances[name][split])
        digests = {split: {i.digest() for i in instances[name][split]} for split in SPLITS}
        assert not digests["train"] & digests["eval"]
        # Within a split, instances differ too (the data is seeded by the index).
        assert len(digests["train"]) == WALK


def test_bad_splits_and_indices_are_refused() -> None:
    family = FAMILIES["filtered-logs"]
    for split, index in (("test", 0), ("train", -1), ("train", True), ("eval", 1.5)):
        with pytest.raises(ValueError):
            family.instance(split, index)  # type: ignore[arg-type]


def test_the_suite_points_describe_the_installed_suite(transfer: dict) -> None:
    """Each family's solver, at the suite's question, computes the suite's own answer."""
    assert set(transfer) == set(FAMILIES) == set(SUITE_POINTS)
    for task_id, task in transfer.items():
        assert str(FAMILIES[task_id].solve(SUITE_POINTS[task_id], task.files)) == task.expected()
    assert {int(t.expected()) for t in transfer.values()} == SUITE_ANSWERS


def test_no_instance_is_or_resembles_a_transfer_task(instances: dict, transfer: dict) -> None:
    suite_names = {name for task in transfer.values() for name in task.files}
    suite_lines = {
        line.strip()
        for task in transfer.values()
        for data in task.files.values()
        for line in data.decode().splitlines()
        if line.strip()
    }
    suite_statements = {task.statement for task in transfer.values()}
    for name in FAMILIES:
        suite_question = params_key(name, SUITE_POINTS[name])
        for split in SPLITS:
            for instance in instances[name][split]:
                assert params_key(name, instance.params) != suite_question
                assert not set(instance.files) & suite_names, (name, split, instance.index)
                lines = {
                    line.strip()
                    for data in instance.files.values()
                    for line in data.decode().splitlines()
                }
                assert not lines & suite_lines, (name, split, instance.index)
                assert instance.statement not in suite_statements
                assert instance.answer not in SUITE_ANSWERS


def test_a_generator_never_draws_an_excluded_question() -> None:
    """The exclusion is enforced, not lucky: exclude the questions a walk drew, and walk again."""
    family = FAMILIES["weighted-checksum"]
    drawn = [family.instance("train", i).params for i in range(20)]
    narrowed = type(family)(
        family.name,
        family.draw_params,
        family.draw_files,
        family.statement,
        family.solve,
        tuple(drawn[:3]),
    )
    banned = {params_key(family.name, p) for p in drawn[:3]}
    for index in range(20):
        assert params_key(family.name, narrowed.instance("train", index).params) not in banned


def test_the_language_schedule_weights_julia_three_times() -> None:
    assert schedule(("julia", "python", "javascript")) == [
        "julia",
        "julia",
        "julia",
        "python",
        "javascript",
    ]
    tasks = train_tasks(("julia", "python", "javascript"), 40)
    by_language = {lang: sum(t.language == lang for t in tasks) for lang in ("julia", "python")}
    assert by_language == {"julia": 24, "python": 8}
    for family in FAMILIES:  # every family meets every language
        assert {t.language for t in tasks if t.instance.family == family} == {
            "julia",
            "python",
            "javascript",
        }
    # Without Julia: Python and JavaScript alike, and a longer run starts with a shorter's groups.
    two = train_tasks(("python", "javascript"), 16)
    assert sum(t.language == "python" for t in two) == 8
    assert [t.id for t in train_tasks(("python", "javascript"), 5)] == [t.id for t in two[:5]]
    assert all(t.instance.split == "train" for t in two)


def test_evaluation_is_balanced_and_held_out() -> None:
    tasks = eval_tasks(("julia", "python", "javascript"), 2)
    assert len(tasks) == 2 * len(FAMILIES) * 3
    cells = {(t.instance.family, t.language) for t in tasks}
    assert len(cells) == len(FAMILIES) * 3
    assert all(sum((t.instance.family, t.language) == c for t in tasks) == 2 for c in cells)
    assert all(t.instance.split == "eval" for t in tasks)
    assert eval_tasks(("python",), 0) == []


def test_the_prompt_states_the_contract() -> None:
    task = train_tasks(("javascript",), 1)[0]
    prompt = task.prompt()
    assert task.instance.statement in prompt
    assert "`solution.js`" in prompt and "`node solution.js`" in prompt
    for name, data in task.instance.files.items():
        assert f"`{name}` ({len(data)} bytes)" in prompt
    assert str(task.instance.answer) not in prompt.replace(task.instance.statement, "")
