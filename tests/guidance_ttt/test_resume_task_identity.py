"""A resume refuses, in one line, a task whose scorer or contract changed since the run started."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from atoll.guidance_ttt import resume
from atoll.guidance_ttt.config import IdentityChanged, load_config
from atoll.guidance_ttt.contract import load_contract

EXAMPLE_CONTRACT = Path(__file__).parents[2] / "tasks" / "frontiersmith-example" / "contract.json"


def _state(tmp_path, contract) -> resume.ResumeState:
    config = load_config(overrides={"training": "off", "state_dir": str(tmp_path / "state")})
    state = resume.ResumeState(
        run_id="r1",
        scenario="guidance-ttt-r1",
        training="search-only",
        identity=config.identity(),
        next_step=1,
        task=contract.identity(),
    )
    resume.resume_path(tmp_path / "state").parent.mkdir(parents=True)
    resume.save(tmp_path / "state", state)
    loaded = resume.load(tmp_path / "state")
    assert loaded is not None and loaded.task == contract.identity()
    return loaded


def test_the_same_contract_resumes_whatever_its_whitespace(tmp_path):
    contract = load_contract(EXAMPLE_CONTRACT)
    saved = _state(tmp_path, contract)
    data = json.loads(EXAMPLE_CONTRACT.read_text())
    padded = tmp_path / "contract.json"
    padded.write_text(json.dumps(data | {"objective": f"  {data['objective']}\n"}, indent=4))
    saved.check_task(load_contract(padded), tmp_path / "state")  # same fields, same run
    saved.check_task(contract, tmp_path / "state")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            {"scorer": "frontiercs-judge", "judge_problem_id": "0"},
            "the task's scorer changed from 'checker' to 'frontiercs-judge'",
        ),
        ({"objective": "Light few cells."}, "the task's contract.json changed"),
        ({"score_direction": "min"}, "the task's contract.json changed"),
    ],
)
def test_a_changed_scorer_or_contract_is_refused_in_one_line(tmp_path, change, says):
    contract = load_contract(EXAMPLE_CONTRACT)
    saved = _state(tmp_path, contract)
    edited = dataclasses.replace(contract, **change)
    with pytest.raises(IdentityChanged) as refused:
        saved.check_task(edited, tmp_path / "state")
    message = str(refused.value)
    assert message.startswith(f"cannot resume: {says}") and "\n" not in message
    assert str(tmp_path / "state") in message


def test_a_state_saved_before_the_task_was_kept_still_resumes(tmp_path):
    contract = load_contract(EXAMPLE_CONTRACT)
    saved = _state(tmp_path, contract)
    data = json.loads(resume.resume_path(tmp_path / "state").read_text())
    del data["task"]
    old = resume.ResumeState.from_json(data)
    assert old.task is None
    old.check_task(dataclasses.replace(contract, objective="Anything."), tmp_path / "state")
    assert saved.task_change(contract) is None
