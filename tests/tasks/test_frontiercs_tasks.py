"""`atoll task frontiercs ID` and `--task frontiercs/<ID>`: any checkout problem as a Harbor task.

The checkout is the judge tests' own (tests/judge/frontiercs_layout.py): a
checker-judged `sum` and an interactive `guess`, nothing from FrontierCS.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harbor.models.task.config import NetworkMode
from harbor.models.task.task import Task
from polyomino_support import run_env

from atoll.core import names
from atoll.core.registry import Registry, TaskSourceError, collect, load, plugin_manager
from atoll.core.run_defaults import default_plugins
from atoll.guidance_ttt.contract import load_task
from atoll.judge import task_source

sys.path.insert(0, str(Path(__file__).parents[1] / "judge"))
import frontiercs_layout as layout  # noqa: E402

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return layout.make_checkout(tmp_path_factory.mktemp("frontiercs"))


def write(venv_bin: Path, checkout: Path, pid: str, out: Path, *extra: str, **env: str):
    return subprocess.run(
        [str(venv_bin / "atoll"), "task", "frontiercs", pid, "--out", str(out)]
        + ["--frontiercs", str(checkout), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        env=run_env(**env),
    )


@pytest.fixture(scope="session")
def sum_task(venv_bin: Path, checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sum-task")
    seed = root / "seed.cpp"
    seed.write_text(layout.SUM_OFF_BY_5)
    done = write(venv_bin, checkout, "sum", root / "task", "--seed", str(seed))
    assert done.returncode == 0, done.stderr
    assert "seed score 75.000000" in done.stderr
    return root / "task"


@pytest.mark.slow
def test_a_written_task_is_a_harbor_task_with_a_judged_seed(sum_task: Path) -> None:
    task = Task(sum_task)
    assert task.config.verifier.network_mode is NetworkMode.NO_NETWORK
    assert task.config.metadata["judge_problem_id"] == "sum"
    record: dict[str, Any] = json.loads((sum_task / "solution" / "result.json").read_text())
    assert record["score"] == pytest.approx(75.0) and record["statuses"] == ["points"] * 3
    assert task.config.metadata["seed_score"] == record["score"]
    assert (sum_task / "solution" / "solution.cpp").read_text() == layout.SUM_OFF_BY_5
    instruction = (sum_task / "instruction.md").read_text()
    assert instruction.startswith("# A Plus B") and "Print the sum of two integers." in instruction
    assert "on the 3 test\ncases" in instruction or "3 test cases" in instruction.replace("\n", " ")
    assert "export FRONTIERCS_PROBLEM_ID=sum" in (sum_task / "tests" / "test.sh").read_text()
    for script in ("tests/test.sh", "solution/solve.sh"):
        assert (sum_task / script).stat().st_mode & 0o111


@pytest.mark.slow
def test_the_contract_is_valid_for_guidance_ttt(sum_task: Path) -> None:
    task = load_task(sum_task)
    assert task.contract.judge_problem_id == "sum"
    assert task.contract.solution_language.value == "cpp"


@pytest.mark.slow
def test_an_interactive_problem_gets_a_trivial_seed_when_none_is_given(
    venv_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    done = write(venv_bin, checkout, "guess", tmp_path / "guess")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "guess" / "solution" / "result.json").read_text())
    assert record["status"] == "valid" and record["score"] == 0.0
    assert "interactive" in (tmp_path / "guess" / "instruction.md").read_text()


@pytest.mark.parametrize(
    ("pid", "prepare", "needle"),
    [
        ("sum", "occupied", "already exists and is not empty"),
        ("oddtype", None, "unknown problem type"),
        ("nosuch", None, "no problem 'nosuch'"),
    ],
)
@pytest.mark.slow
def test_bad_requests_are_one_clear_line(
    venv_bin: Path, checkout: Path, tmp_path: Path, pid: str, prepare: str | None, needle: str
) -> None:
    out = tmp_path / "out"
    if prepare == "occupied":
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    done = write(venv_bin, checkout, pid, out)
    assert done.returncode == 2 and needle in done.stderr
    assert "Traceback" not in done.stderr
    if prepare == "occupied":
        assert [p.name for p in out.iterdir()] == ["keep.txt"]  # nothing lost, nothing added
        assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging left behind


def fresh_registry() -> Registry:
    return Registry(collect(plugin_manager()))


def test_frontiercs_names_resolve_through_the_task_source_when_a_checkout_is_set(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRONTIERCS_HOME", str(checkout))
    monkeypatch.setenv("ATOLL_TASK_CACHE", str(tmp_path / "cache"))
    registry = fresh_registry()
    argv = names.resolve(["run", "--agent", "oracle", "--task", "frontiercs/sum"], registry)
    directory = Path(argv[argv.index("--path") + 1])
    assert Task(directory).config.metadata["judge_problem_id"] == "sum"
    # The task source's job plugin comes with it, as a static task's does.
    assert default_plugins(["oracle"], registry, directory)[0] == ["frontiercs-judge"]
    # Written once, then reused.
    again = names.resolve(["run", "--task", "frontiercs/sum"], fresh_registry())
    assert again[again.index("--path") + 1] == str(directory)
    with pytest.raises(TaskSourceError, match="no problem 'nosuch'"):
        names.resolve(["run", "--task", "frontiercs/nosuch"], registry)


def test_written_tasks_are_kept_in_atoll_cache_unless_atoll_task_cache_names_a_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(task_source.CACHE_ENV, raising=False)
    monkeypatch.setenv("ATOLL_CACHE_DIR", str(tmp_path / "cache"))
    assert task_source.task_cache() == tmp_path / "cache" / "tasks" / "frontiercs"
    monkeypatch.setenv(task_source.CACHE_ENV, str(tmp_path / "tasks"))
    assert task_source.task_cache() == tmp_path / "tasks" / "frontiercs"


def test_without_a_checkout_org_name_references_still_reach_harbor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FRONTIERCS_HOME", raising=False)
    for reference in ("frontiercs/17", "someorg/sometask@v1"):
        argv = names.resolve(["run", "--task", reference], load())
        assert argv == ["run", "--task", reference]


@pytest.mark.slow
def test_the_oracle_scores_a_written_task_on_atoll_local(
    venv_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    """An interactive task with a real seed: the oracle installs it, the verifier re-scores it."""
    seed = tmp_path / "linear.cpp"
    seed.write_text(layout.GUESS_LINEAR)
    written = write(venv_bin, checkout, "guess", tmp_path / "guess", "--seed", str(seed))
    assert written.returncode == 0, written.stderr
    recorded = json.loads((tmp_path / "guess" / "solution" / "result.json").read_text())
    assert 0 < recorded["score"] < 100  # fewer questions would earn more
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    environ = run_env(FRONTIERCS_HOME=str(checkout))
    environ.pop("FRONTIERCS_JUDGE_URL", None)
    done = subprocess.run(
        [str(venv_bin / "atoll"), "run", "--agent", "oracle", "-p", str(tmp_path / "guess")]
        + ["--plugin", "frontiercs-judge", "--env", "atoll-local", "-o", str(jobs)],
        capture_output=True,
        text=True,
        timeout=540,
        cwd=jobs,
        env=environ,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (trial,) = jobs.glob("*/guess__*/result.json")
    result = json.loads(trial.read_text())
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_result"]["rewards"] == {
        "reward": recorded["score"],
        "raw_score": recorded["raw_score"],
    }
