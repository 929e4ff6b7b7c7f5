"""The task contract: a valid task loads typed; each kind of bad contract gets one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from guidance_builders import CONTRACT, STATEMENT, write_task

from atoll.guidance_ttt.contract import (
    ContractError,
    Direction,
    Language,
    contract_schema,
    load_task,
)


def test_valid_task_loads_typed(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "t"))
    assert task.statement == STATEMENT
    c = task.contract
    assert c.solution_language is Language.CPP
    assert c.score_direction is Direction.MAX
    assert c.raw_score_label == "packing density"
    assert c.judge_problem_id == "0"
    assert c.search_value(12.5) == 12.5
    assert c.direction_phrase == "higher packing density is better"


def test_minimizing_task_negates_values(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "t", {**CONTRACT, "score_direction": "min"}))
    assert task.contract.search_value(10177.4) == -10177.4
    assert task.contract.direction_phrase == "lower packing density is better"


def test_schema_ships_with_the_package_and_documents_every_field() -> None:
    schema = contract_schema()
    assert schema["additionalProperties"] is False
    # Today's tasks name no scorer and may omit their language: the judge, C++.
    optional = {"scorer", "solution_language", "judge_problem_id"}
    assert set(schema["required"]) == set(CONTRACT) - optional
    assert set(schema["properties"]) == set(CONTRACT) | {"scorer"}
    assert all(prop.get("description") for prop in schema["properties"].values())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"colour": "blue"}, "unknown field 'colour'"),
        ({"score_direction": "up"}, "field 'score_direction' must be 'max' or 'min', not 'up'"),
        ({"solution_language": "rust"}, "field 'solution_language' must be 'cpp' or 'python'"),
        ({"judge_problem_id": 0}, "field 'judge_problem_id' must be a string, not 0"),
        ({"objective": "   "}, "field 'objective' must not be blank"),
        ({"scorer": " "}, "field 'scorer' must not be blank"),
        ({"scorer": 3}, "field 'scorer' must be a string, not 3"),
    ],
)
def test_bad_field_is_named(tmp_path: Path, change: dict, expected: str) -> None:
    write_task(tmp_path / "t", {**CONTRACT, **change})
    with pytest.raises(ContractError) as caught:
        load_task(tmp_path / "t")
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message


def test_missing_field_is_named(tmp_path: Path) -> None:
    contract = dict(CONTRACT)
    del contract["raw_score_label"]
    write_task(tmp_path / "t", contract)
    with pytest.raises(ContractError, match="missing field 'raw_score_label'"):
        load_task(tmp_path / "t")


def test_unknown_key_is_reported_before_other_problems(tmp_path: Path) -> None:
    contract = {**CONTRACT, "extra": 1, "score_direction": "sideways"}
    write_task(tmp_path / "t", contract)
    with pytest.raises(ContractError, match="unknown field 'extra'"):
        load_task(tmp_path / "t")


def test_not_an_object(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "contract.json").write_text(json.dumps(["cpp"]))
    with pytest.raises(ContractError, match="must be a JSON object"):
        load_task(directory)


def test_invalid_json_names_line(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "contract.json").write_text('{\n  "objective": "x",\n}')
    with pytest.raises(ContractError, match=r"not valid JSON \(line 3"):
        load_task(directory)


def test_missing_files(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "contract.json").unlink()
    with pytest.raises(ContractError, match="contract.json: missing"):
        load_task(directory)
    write_task(directory)
    (directory / "instruction.md").write_text("  \n")
    with pytest.raises(ContractError, match="instruction.md: empty"):
        load_task(directory)
    with pytest.raises(ContractError, match="not a task directory"):
        load_task(tmp_path / "nowhere")


def test_a_contract_without_scorer_or_language_is_a_judged_cpp_task(tmp_path: Path) -> None:
    today = {k: v for k, v in CONTRACT.items() if k != "solution_language"}
    contract = load_task(write_task(tmp_path / "t", today)).contract
    assert (contract.scorer, contract.solution_language) == ("frontiercs-judge", Language.CPP)
    assert contract.judge_problem_id == "0"


def test_a_checker_task_names_its_scorer_and_language_and_needs_no_judge_id(tmp_path: Path) -> None:
    emitted = {k: v for k, v in CONTRACT.items() if k != "judge_problem_id"}
    emitted |= {"scorer": "checker", "solution_language": "python"}
    task = load_task(write_task(tmp_path / "t", emitted))
    assert task.contract.scorer == "checker"
    assert task.contract.solution_language is Language.PYTHON
    assert task.contract.judge_problem_id is None
    assert task.directory == tmp_path / "t"


def test_a_judged_task_without_a_problem_id_is_named(tmp_path: Path) -> None:
    judged = {k: v for k, v in CONTRACT.items() if k != "judge_problem_id"}
    for contract in (judged, {**judged, "scorer": "frontiercs-judge"}):
        write_task(tmp_path / "t", contract)
        with pytest.raises(ContractError, match="missing field 'judge_problem_id'"):
            load_task(tmp_path / "t")


def test_the_shipped_tasks_contracts_load(repo: Path) -> None:
    polyomino = load_task(repo / "tasks" / "polyomino_packing").contract
    assert (polyomino.scorer, polyomino.solution_language) == ("frontiercs-judge", Language.CPP)
    example = load_task(repo / "tasks" / "frontiersmith-example").contract
    assert (example.scorer, example.solution_language) == ("checker", Language.PYTHON)
    assert example.score_direction is Direction.MAX
