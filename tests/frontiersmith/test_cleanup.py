"""`cleanup` stops a killed run's Docker trial through Harbor's own environment, then confirms.

A trial's environment is started as Harbor's trial starts it (same session
id, same task) and left running, as a SIGKILL of the run would leave it,
with its worker receipt open. `cleanup` rebuilds the environment, asks it
to stop with delete, and closes the receipt only once no container of the
trial's Compose project is left. The same for an atoll-local trial: its
own root (and no other) is removed and confirmed gone.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.engine import docker_engine
from support.frontiersmith_model import cart_bundle_spec

from atoll.checker import Contract
from atoll.core.ledger import Ledger
from atoll.frontiersmith.bundle import OFFLINE_BASE_IMAGE, write_bundle
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.runs import create_run
from atoll.frontiersmith.upkeep import _compose_containers, cleanup_command

pytestmark = pytest.mark.timeout(600)


def _bundle(where: Path) -> Path:
    contract = Contract(seed=3, check_seeds=(4, 5, 6))
    write_bundle(where, cart_bundle_spec(contract, "c1", base_image=OFFLINE_BASE_IMAGE))
    return where


async def _leave_running(
    task_dir: Path, trial_dir: Path, name: str, environment: dict | None = None
) -> None:
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.task.task import Task
    from harbor.models.trial.config import EnvironmentConfig
    from harbor.models.trial.paths import TrialPaths

    task = Task(task_dir)
    paths = TrialPaths(trial_dir)
    paths.mkdir()
    env = EnvironmentFactory.create_environment_from_config(
        config=EnvironmentConfig(**(environment or {"type": "docker"})),
        environment_dir=task.paths.environment_dir,
        environment_name=task.short_name,
        session_id=f"{name}__env",
        trial_paths=paths,
        task_env_config=task.config.environment,
    )
    await env.start(force_build=False)


@pytest.mark.slow
@pytest.mark.docker
def test_cleanup_stops_a_left_docker_trial_and_confirms_before_closing(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_engine())
    out = tmp_path / "out"
    config = RunConfig(seeds="textbook", target=1, budget_micro=10**6, model="m")
    run = create_run(out, config, "e" * 64, "code")
    task_dir = _bundle(run.work_dir / "c1" / "staging" / "cart")
    name = "cart__baseline__a1b2c3"
    trial_dir = run.work_dir / "c1" / "trials" / name
    project = f"{name}__env"
    with Ledger.create(run.ledger_path, config.budget_micro) as ledger:
        ledger.start_work(
            "trial:c1:baseline",
            "docker",
            name,
            {"trial_dir": str(trial_dir), "task_dir": str(task_dir), "compose_project": project},
        )
    try:
        asyncio.run(_leave_running(task_dir, trial_dir, name))
        assert _compose_containers(project) == 1  # what a killed run leaves

        assert cleanup_command(run.run_id, out, remove_work=False) == 0

        assert _compose_containers(project) == 0
        with Ledger.open(run.ledger_path) as ledger:
            (work,) = ledger.work()
        assert work.state == "cleaned"
        assert "no container left" in work.detail["how"]
    finally:
        from atoll.frontiersmith.upkeep import _remove_compose_project

        _remove_compose_project(project)


@pytest.mark.slow
def test_a_receipt_stays_open_when_the_environment_cannot_confirm(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    out = tmp_path / "out"
    config = RunConfig(seeds="textbook", target=1, budget_micro=10**6, model="m")
    run = create_run(out, config, "d" * 64, "code")
    with Ledger.create(run.ledger_path, config.budget_micro) as ledger:
        ledger.start_work(
            "trial:c1:nop", "docker", "cart__nop__x", {"compose_project": "cart__nop__x__env"}
        )
    assert cleanup_command(run.run_id, out, remove_work=False) == 2
    with Ledger.open(run.ledger_path) as ledger:
        assert [w.state for w in ledger.work()] == ["running"]  # a later cleanup can finish it


@pytest.mark.slow
def test_cleanup_removes_only_the_root_of_a_left_atoll_local_trial(tmp_path: Path) -> None:
    from atoll.frontiersmith.trials import resolve_environment

    out = tmp_path / "out"
    config = RunConfig(seeds="textbook", target=1, budget_micro=10**6, model="m")
    run = create_run(out, config, "d" * 64, "code")
    task_dir = _bundle(run.work_dir / "c1" / "staging" / "cart")
    roots = run.work_dir / "local-roots"
    name = "cart__baseline__d4e5f6"
    own = roots / name
    other = roots / "cart__sample-0__a1a1a1"  # another trial's root: not this receipt's
    (other / "atoll-local-kept").mkdir(parents=True)
    environment = resolve_environment("atoll-local").config() | {
        "kwargs": {"root_parent": str(own)}
    }
    with Ledger.create(run.ledger_path, config.budget_micro) as ledger:
        ledger.start_work(
            "trial:c1:baseline",
            "atoll-local",
            name,
            {
                "trial_dir": str(run.work_dir / "c1" / "trials" / name),
                "task_dir": str(task_dir),
                "local_root": str(own),
            },
        )
    asyncio.run(_leave_running(task_dir, run.work_dir / "c1" / "trials" / name, name, environment))
    (left,) = own.iterdir()  # what a killed run leaves: the trial's started root
    assert (left / "fs").is_dir()

    assert cleanup_command(run.run_id, out, remove_work=False) == 0

    assert not own.exists()
    assert (other / "atoll-local-kept").is_dir()  # only that trial's root was removed
    with Ledger.open(run.ledger_path) as ledger:
        (work,) = ledger.work()
    assert work.state == "cleaned" and name in work.detail["how"]


def test_an_atoll_local_receipt_naming_a_root_outside_the_run_stays_open(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = RunConfig(seeds="textbook", target=1, budget_micro=10**6, model="m")
    run = create_run(out, config, "c" * 64, "code")
    elsewhere = tmp_path / "not-the-runs"
    elsewhere.mkdir()
    with Ledger.create(run.ledger_path, config.budget_micro) as ledger:
        ledger.start_work(
            "trial:c1:nop", "atoll-local", "cart__nop__x", {"local_root": str(elsewhere)}
        )
    assert cleanup_command(run.run_id, out, remove_work=False) == 2
    assert elsewhere.is_dir()  # never removed: it is not this run's
    with Ledger.open(run.ledger_path) as ledger:
        (work,) = ledger.work()
    assert work.state == "running"
