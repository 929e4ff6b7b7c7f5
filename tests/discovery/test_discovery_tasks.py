"""The five discovery task directories: Harbor accepts them, the harness reads them, the
registry finds them, they carry the verifier and the grader byte for byte, and what
they tell the agent (limits, direction, label) is what the verifier applies.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from harbor.models.task.config import NetworkMode
from harbor.models.task.task import Task

from atoll.core.records import Kind
from atoll.core.registry import load
from atoll.discovery import TASKS, carried_sources, task_dir, task_facts
from atoll.guidance_ttt.contract import Language, load_task

GiB = 1 << 30
SOURCES = ("github.com/test-time-training/discover", "github.com/Human-Agent-Society/reef")


@pytest.mark.parametrize("name", TASKS)
def test_harbor_loads_the_task_with_a_root_verifier_and_no_network(name):
    task = Task(task_dir(name))
    config = task.config
    assert task.name == f"atoll/{name}"
    assert config.verifier.user == "root"  # it runs the candidate as another uid
    policy = config.verifier.explicit_phase_policy()
    assert policy is not None and policy.network_mode is NetworkMode.NO_NETWORK
    assert config.environment.workdir == "/workspace"
    assert task.paths.discovered_test_path is not None
    assert task.paths.discovered_solve_path is not None
    problem = json.loads((task_dir(name) / "tests" / "problem.json").read_text())
    # The verifier phase outlasts the candidate's wall clock and the verifier's own work.
    assert config.verifier.timeout_sec >= problem["limits"]["wall_seconds"] + 120


@pytest.mark.parametrize("name", TASKS)
def test_the_contract_agrees_with_task_toml_and_the_verifier(name):
    task = load_task(task_dir(name))
    contract = task.contract
    metadata = tomllib.loads((task_dir(name) / "task.toml").read_text())["metadata"]
    assert contract.scorer == "verifier"
    assert contract.solution_language is Language.PYTHON
    assert contract.score_direction.value == metadata["score_direction"]
    assert contract.raw_score_label == metadata["raw_score_label"]
    problem = json.loads((task_dir(name) / "tests" / "problem.json").read_text())
    assert problem["problem"] == metadata["problem"]
    if problem["problem"] == "circle_packing":
        assert name.endswith(f"_{problem['circles']}")
        assert f"exactly {problem['circles']} triples" in contract.solution_contract


@pytest.mark.parametrize("name", TASKS)
def test_the_stated_limits_are_the_ones_the_verifier_applies(name):
    limits = json.loads((task_dir(name) / "tests" / "problem.json").read_text())["limits"]
    assert limits["processes"] == 1 and limits["memory_bytes"] == 2 * GiB
    instruction = " ".join((task_dir(name) / "instruction.md").read_text().split())
    constraint = load_task(task_dir(name)).contract.mechanism_constraint
    for text in (instruction, constraint):
        assert f"{limits['cpu_seconds']} seconds of CPU time" in text
        assert f"{limits['wall_seconds']} seconds of wall-clock time" in text
        assert "2 GiB" in text
    assert "single process" in instruction and "single process" in constraint
    assert f"at most {limits['stdout_bytes'] >> 20} MiB to standard output" in instruction
    assert "`/workspace/solution.py`" in instruction


@pytest.mark.parametrize("name", TASKS)
def test_each_task_carries_the_verifier_and_the_grader_byte_for_byte(name):
    for file, source in carried_sources().items():
        carried = task_dir(name) / "tests" / file
        assert carried.read_bytes() == source, (
            f"{carried} differs from its source: run `uv run python scripts/sync_discovery_tasks.py`"
        )
    test_sh = (task_dir(name) / "tests" / "test.sh").read_text()
    assert "python3 -I /tests/verify.py --tests /tests --submission /workspace/solution.py" in (
        " ".join(test_sh.replace("\\\n", " ").split())
    )


def test_the_tasks_share_one_image_and_one_verifier_script():
    """One Dockerfile and one test.sh for all five: a Docker engine builds the image once."""
    dockerfiles = {(task_dir(n) / "environment" / "Dockerfile").read_bytes() for n in TASKS}
    scripts = {(task_dir(n) / "tests" / "test.sh").read_bytes() for n in TASKS}
    assert len(dockerfiles) == len(scripts) == 1
    (dockerfile,) = dockerfiles
    assert b"FROM atoll/base:bookworm\n" in dockerfile  # which has numpy: nothing to install
    assert re.findall(rb"^RUN .*$", dockerfile, re.M) == [b"RUN python3 -c 'import numpy'"]
    assert not re.search(rb"^\s*(COPY|ADD)\b", dockerfile, re.M)  # nothing of tests/ baked in


@pytest.mark.parametrize("name", TASKS)
def test_the_registry_resolves_each_name_to_its_directory(repo: Path, name):
    record = load().get(Kind.TASK, name)
    assert record.distribution == "atoll-discovery"
    assert Path(record.target) == repo / "tasks" / name  # the editable install: the live dir
    assert "python3-numpy" in record.requires and not record.job_plugins


@pytest.mark.parametrize("name", TASKS)
def test_each_task_names_its_records_with_their_sources(name):
    facts = task_facts(task_dir(name))
    assert facts.records, name
    for record in facts.records:
        assert any(source in record.source for source in SOURCES), record
        # Every record beats the seed, in the task's direction.
        assert facts.seed_score is not None
        better = (
            record.value < facts.seed_score
            if facts.direction == "min"
            else record.value > facts.seed_score
        )
        assert better, (name, record)


def test_the_readme_task_table_lists_every_task_with_its_records(repo: Path):
    readme = (repo / "README.md").read_text()
    table = readme[readme.index("## Tasks") : readme.index("## Installing one plugin")]
    for name in TASKS:
        (row,) = [line for line in table.splitlines() if line.startswith(f"| `{name}` |")]
        for record in task_facts(task_dir(name)).records:
            assert f"{record.value:g}" in row.replace("0.9610", "0.961"), (name, record.value)
        assert any(source in row for source in SOURCES), row


def test_the_wheel_ships_every_task(repo: Path):
    wheel = tomllib.loads((repo / "verifiers" / "discovery" / "pyproject.toml").read_text())
    shipped = wheel["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert shipped == {f"../../tasks/{n}": f"atoll/discovery/tasks/{n}" for n in TASKS}
