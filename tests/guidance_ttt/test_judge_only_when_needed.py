"""The FrontierCS judge starts for a Guidance-TTT run only when the task's scorer or verifier needs it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from atoll.core import names, run_defaults
from atoll.core.registry import load
from atoll.guidance_ttt.harbor.reef_episode import needs_judge

EXAMPLE = Path(__file__).parents[2] / "tasks" / "frontiersmith-example"


@pytest.fixture
def no_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")


def _plugins(*argv: str) -> tuple[list[str], list[str]]:
    registry = load()
    args, notes = run_defaults.apply(names.resolve(list(argv), registry), registry)
    return [args[i + 1] for i, a in enumerate(args) if a == "--plugin"], notes


def test_a_checker_task_gets_reef_and_no_judge(no_docker, tmp_path):
    by_name, notes = _plugins("run", "--agent", "guidance-ttt", "--task", "frontiersmith-example")
    assert by_name == ["reef-stack"]
    assert notes[0].startswith("atoll: added --plugin reef-stack (needed by guidance-ttt)")
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    assert _plugins("run", "--agent", "guidance-ttt", "-p", str(bundle))[0] == ["reef-stack"]
    assert not needs_judge(bundle)


def test_a_judged_task_still_gets_the_judge(no_docker, tmp_path):
    polyomino, _ = _plugins("run", "--agent", "guidance-ttt", "--task", "polyomino_packing")
    assert polyomino == ["frontiercs-judge", "reef-stack"]
    assert needs_judge(load().task_dir("polyomino_packing"))
    # A task directory nobody registers, whose contract names the judge: its scorer needs it.
    task = tmp_path / "judged"
    shutil.copytree(EXAMPLE, task)
    contract = json.loads((task / "contract.json").read_text())
    contract |= {"scorer": "frontiercs-judge", "judge_problem_id": "0"}
    (task / "contract.json").write_text(json.dumps(contract))
    assert _plugins("run", "--agent", "guidance-ttt", "-p", str(task))[0] == [
        "frontiercs-judge",
        "reef-stack",
    ]
    assert needs_judge(task)
    # No contract.json at all (or an unreadable one): the contract's default scorer, the judge.
    (task / "contract.json").write_text("{not json")
    assert _plugins("run", "--agent", "guidance-ttt", "-p", str(task))[0][0] == "frontiercs-judge"


def test_no_task_known_keeps_the_default_scorers_plugins(no_docker):
    assert _plugins("run", "--agent", "guidance-ttt")[0] == ["frontiercs-judge", "reef-stack"]
