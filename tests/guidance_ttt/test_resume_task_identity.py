"""A resume refuses, in one line, a task whose scorer, contract or grader changed since it started."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from atoll.guidance_ttt.config import IdentityChanged, load_config
from atoll.guidance_ttt.contract import GRADER_DIGEST, Task, load_contract, load_task
from atoll.guidance_ttt.state import resume

EXAMPLE = Path(__file__).parents[2] / "tasks" / "frontiersmith-example"
EXAMPLE_CONTRACT = EXAMPLE / "contract.json"


def _task(contract) -> Task:
    """The contract alone, as a task without a directory (so without a grader to digest)."""
    return Task(statement="", contract=contract)


def _state(tmp_path, task) -> resume.ResumeState:
    config = load_config(overrides={"training": "off", "state_dir": str(tmp_path / "state")})
    state = resume.ResumeState(
        run_id="r1",
        scenario="guidance-ttt-r1",
        training="search-only",
        identity=config.identity(),
        next_step=1,
        task=task.identity(),
    )
    resume.resume_path(tmp_path / "state").parent.mkdir(parents=True)
    resume.save(tmp_path / "state", state)
    loaded = resume.load(tmp_path / "state")
    assert loaded is not None and loaded.task == task.identity()
    return loaded


def test_the_same_contract_resumes_whatever_its_whitespace(tmp_path):
    contract = load_contract(EXAMPLE_CONTRACT)
    saved = _state(tmp_path, _task(contract))
    data = json.loads(EXAMPLE_CONTRACT.read_text())
    padded = tmp_path / "contract.json"
    padded.write_text(json.dumps(data | {"objective": f"  {data['objective']}\n"}, indent=4))
    saved.check_task(_task(load_contract(padded)), tmp_path / "state")  # same fields, same run
    saved.check_task(_task(contract), tmp_path / "state")


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
    saved = _state(tmp_path, _task(contract))
    edited = dataclasses.replace(contract, **change)
    with pytest.raises(IdentityChanged) as refused:
        saved.check_task(_task(edited), tmp_path / "state")
    message = str(refused.value)
    assert message.startswith(f"cannot resume: {says}") and "\n" not in message
    assert str(tmp_path / "state") in message


def test_a_state_saved_before_the_task_was_kept_still_resumes(tmp_path):
    contract = load_contract(EXAMPLE_CONTRACT)
    saved = _state(tmp_path, _task(contract))
    data = json.loads(resume.resume_path(tmp_path / "state").read_text())
    del data["task"]
    old = resume.ResumeState.from_json(data)
    assert old.task is None
    old.check_task(_task(dataclasses.replace(contract, objective="Anything.")), tmp_path / "state")
    assert saved.task_change(_task(contract)) is None


def test_a_changed_grader_is_refused_and_an_unchanged_one_resumes(tmp_path):
    task_dir = tmp_path / "task"
    shutil.copytree(EXAMPLE, task_dir)
    saved = _state(tmp_path, load_task(task_dir))
    assert saved.task is not None and GRADER_DIGEST in saved.task
    saved.check_task(load_task(task_dir), tmp_path / "state")  # the same grader: the same run
    (task_dir / "instruction.md").write_text("Reworded.\n")  # not the grader: still resumes
    saved.check_task(load_task(task_dir), tmp_path / "state")
    grader = task_dir / "tests" / "scorer.py"
    grader.write_text(grader.read_text() + "\n# scores differently now\n")
    with pytest.raises(IdentityChanged) as refused:
        saved.check_task(load_task(task_dir), tmp_path / "state")
    message = str(refused.value)
    assert message.startswith("cannot resume: the task's grader (its tests/) changed")
    assert "\n" not in message


def test_a_state_saved_before_the_grader_was_kept_still_resumes(tmp_path):
    task_dir = tmp_path / "task"
    shutil.copytree(EXAMPLE, task_dir)
    saved = _state(tmp_path, load_task(task_dir))
    data = json.loads(resume.resume_path(tmp_path / "state").read_text())
    del data["task"][GRADER_DIGEST]
    old = resume.ResumeState.from_json(data)
    (task_dir / "tests" / "scorer.py").write_text("# another grader\n")
    old.check_task(load_task(task_dir), tmp_path / "state")
    assert saved.task_change(load_task(task_dir)) is not None
