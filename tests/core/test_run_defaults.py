"""`atoll run` fills in an agent's job plugins and the environment, and says so; the user can opt out."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from atoll.core import cli, run_defaults
from atoll.core.records import Kind
from atoll.core.registry import load

GUIDANCE = "atoll.guidance_ttt.agent:GuidanceTTTAgent"


@pytest.fixture
def no_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A DOCKER_HOST where nothing listens, so the environment default is atoll-local."""
    url = f"unix://{tmp_path}/no-engine.sock"
    monkeypatch.setenv("DOCKER_HOST", url)
    return url


def resolved(*argv: str) -> tuple[list[str], list[str]]:
    from atoll.core import names

    registry = load()
    return run_defaults.apply(names.resolve(list(argv), registry), registry)


def plugins_of(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "--plugin"]


def test_guidance_ttt_gets_its_job_plugins_and_a_note(no_docker: str) -> None:
    argv, notes = resolved("run", "--agent", "guidance-ttt", "--task", "polyomino_packing")
    assert plugins_of(argv) == ["frontiercs-judge", "reef-stack"]
    assert notes[0] == (
        "atoll: added --plugin frontiercs-judge --plugin reef-stack (needed by guidance-ttt, "
        "polyomino_packing); pass your own --plugin, or --no-default-plugins, to choose otherwise"
    )
    assert argv[argv.index("--agent") + 1] == GUIDANCE


def test_an_own_plugin_or_the_opt_out_flag_adds_none(no_docker: str) -> None:
    own, notes = resolved("run", "--agent", "guidance-ttt", "--plugin", "reef-stack", "--pk", "a=b")
    assert plugins_of(own) == ["reef-stack"]
    assert not any("--plugin" in n for n in notes)
    bare, notes = resolved("run", "--no-default-plugins", "--agent", "guidance-ttt")
    assert plugins_of(bare) == [] and "--no-default-plugins" not in bare
    assert not any("--plugin" in n for n in notes)


def test_a_task_brings_the_plugins_it_declares(no_docker: str) -> None:
    argv, notes = resolved("run", "--agent", "oracle", "--task", "polyomino_packing")
    assert plugins_of(argv) == ["frontiercs-judge"]  # its verifier scores through the judge
    assert "(needed by polyomino_packing)" in notes[0]


def test_agents_and_tasks_without_declared_plugins_get_none(no_docker: str, tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text("")
    argv, notes = resolved("run", "--agent", "oracle", "--path", str(tmp_path))
    assert plugins_of(argv) == []
    assert [n for n in notes if "--plugin" in n] == []


def test_no_engine_means_atoll_local_said_in_one_line(no_docker: str) -> None:
    started = time.monotonic()
    argv, notes = resolved("run", "--agent", "oracle", "--task", "polyomino_packing")
    assert time.monotonic() - started < 5
    local = load().get(Kind.ENVIRONMENT, "atoll-local").target
    assert argv[argv.index("--env") + 1] == local
    assert notes[-1:] == [
        f"atoll: --env atoll-local (no Docker engine answers at {no_docker}); pass --env to choose"
    ]


@pytest.mark.parametrize(
    "given",
    [["--env", "docker"], ["-e", "docker"], ["--env=docker"], ["-c", "job.yaml"]],
    ids=["--env", "-e", "--env=", "-c"],
)
def test_an_environment_or_config_of_ones_own_is_kept(no_docker: str, given: list[str]) -> None:
    argv, notes = resolved("run", "--agent", "oracle", *given)
    assert argv.count("--env") + argv.count("-e") <= 1
    assert not any("--env" in n for n in notes)


def test_other_commands_and_args_after_the_separator_are_untouched(no_docker: str) -> None:
    trial = ["trial", "start", "--agent", GUIDANCE, "-p", "x"]
    assert run_defaults.apply(trial, load()) == (trial, [])
    argv, _ = resolved("run", "--agent", "oracle", "--", "--no-default-plugins")
    assert argv[-2:] == ["--", "--no-default-plugins"]


def test_base_image_of_a_dockerfile(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("# c\nARG X=1\nFROM --platform=linux/amd64 atoll/base:bookworm AS b\n")
    assert run_defaults.base_image(dockerfile) == "atoll/base:bookworm"
    dockerfile.write_text("FROM ${BASE}\n")
    assert run_defaults.base_image(dockerfile) is None
    assert run_defaults.base_image(tmp_path / "missing") is None


def test_plugins_list_shows_an_agents_job_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugins", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    (agent,) = [r for r in rows if r["name"] == "guidance-ttt" and r["kind"] == "agent"]
    # the judge comes from the scorer its task's contract names (the judge by default)
    assert agent["job_plugins"] == ["reef-stack"] and agent["task_scorer"] == "frontiercs-judge"
    scorers = {r["name"]: r["job_plugins"] for r in rows if r["kind"] == "scorer"}
    assert scorers["frontiercs-judge"] == ["frontiercs-judge"] and scorers["checker"] == []


def _task_scored_by(tmp_path: Path, repo: Path, scorer: str) -> Path:
    """A copy of the FrontierSmith example whose contract names `scorer`."""
    import shutil

    task = tmp_path / "task"
    shutil.copytree(repo / "tasks" / "frontiersmith-example", task)
    contract = json.loads((task / "contract.json").read_text())
    (task / "contract.json").write_text(json.dumps({**contract, "scorer": scorer}))
    return task


def test_a_task_whose_scorer_is_not_installed_is_refused_before_harbor_starts(
    no_docker: str, tmp_path: Path, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = _task_scored_by(tmp_path, repo, "no-such-scorer")
    jobs = tmp_path / "jobs"
    code = cli.main(["run", "--agent", "guidance-ttt", "-p", str(task), "-o", str(jobs)])
    assert code != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "the task's scorer 'no-such-scorer' is not installed" in line and "checker" in line
    assert not jobs.exists()  # no job was started


@pytest.mark.parametrize(
    ("scorer", "plugins"),
    [("checker", ["reef-stack"]), ("frontiercs-judge", ["frontiercs-judge", "reef-stack"])],
)
def test_a_task_whose_scorer_is_installed_gets_that_scorers_plugins(
    no_docker: str, tmp_path: Path, repo: Path, scorer: str, plugins: list[str]
) -> None:
    task = _task_scored_by(tmp_path, repo, scorer)
    argv, _ = resolved("run", "--agent", "guidance-ttt", "-p", str(task))
    assert plugins_of(argv) == plugins
    # an agent that does not score with the task's scorer is never refused for it
    oracle, _ = resolved(
        "run",
        "--agent",
        "oracle",
        "-p",
        str(_task_scored_by(tmp_path / "o", repo, "no-such-scorer")),
    )
    assert plugins_of(oracle) == []
