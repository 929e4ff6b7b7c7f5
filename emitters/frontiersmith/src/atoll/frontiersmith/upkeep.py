"""`reconcile` and `cleanup`: settling a killed run's uncertain requests and removing its leftovers.

Both hold the run's lock, so they never act on a run a live process owns.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from atoll.core.ledger import (
    Ledger,
    LedgerError,
    Receipt,
    WorkerReceipt,
    format_usd,
    usd_to_micro,
)
from atoll.frontiersmith.command import EXIT_OK, EXIT_USAGE, error_line, make_console
from atoll.frontiersmith.report import ledger_line
from atoll.frontiersmith.resend import is_rollout, resent_on_resume
from atoll.frontiersmith.runs import RunDir, RunError, open_run, resume_command


@contextlib.contextmanager
def _owned_run(
    console: Console, run_id: str, out: Path | None
) -> Iterator[tuple[RunDir, Ledger] | None]:
    """The run and its ledger, held against any other process; None (and an error line) if not."""
    try:
        run = open_run(run_id, out)
        lock = run.lock()
    except RunError as exc:
        error_line(console, str(exc))
        yield None
        return
    try:
        with Ledger.open(run.ledger_path) as ledger:
            yield run, ledger
    finally:
        lock.release()


def reconcile_command(
    run_id: str, out: Path | None, requests: list[int], cost: str | None, note: str, list_only: bool
) -> int:
    console = make_console()
    with _owned_run(console, run_id, out) as owned:
        if owned is None:
            return EXIT_USAGE
        run, ledger = owned
        uncertain = ledger.recover()
        table = Table(title=f"uncertain requests of run {run_id}")
        for column in ("receipt", "stage:seed", "reserved", "error"):
            table.add_column(column)
        for r in uncertain:
            table.add_row(str(r.id), r.label, format_usd(r.reserved_micro), (r.error or "")[:80])
        console.print(table)
        if list_only or not uncertain:
            console.print("nothing to reconcile" if not uncertain else "")
            return EXIT_OK
        ids = {r.id for r in uncertain}
        unknown = sorted(set(requests) - ids)
        if unknown:
            error_line(console, f"receipt(s) {unknown} are not uncertain in run {run_id}")
            return EXIT_USAGE
        chosen = [r for r in uncertain if not requests or r.id in requests]
        cost_micro = None
        if cost is not None:
            if len(chosen) != 1:
                error_line(console, "--cost settles one request: name it with --request ID")
                return EXIT_USAGE
            try:
                cost_micro = usd_to_micro(cost)
            except LedgerError as exc:
                error_line(console, str(exc))
                return EXIT_USAGE
        settled = [ledger.reconcile(r.id, cost_micro, note) for r in chosen]
        for r in settled:
            console.print(f"receipt {r.id} ({r.label}) settled at {format_usd(r.cost_micro or 0)}")
        again = resent_on_resume(ledger, settled, run.outcomes())
        run.log_event(
            {
                "event": "reconcile",
                "receipts": [r.id for r in chosen],
                "settled_micro": sum(r.cost_micro or 0 for r in settled),
                "resent_on_resume": len(again),
                "resent_reserved_micro": sum(r.reserved_micro for r in again),
            }
        )
        console.print(resend_line(settled, again))
        console.print(f"{ledger_line(ledger)}; resume with {resume_command(run)}")
        return EXIT_OK


def resend_line(settled: list[Receipt], again: list[Receipt]) -> str:
    """What a reconcile costs, said plainly: the settled amount, and what the resume re-sends."""
    counted = sum(r.cost_micro or 0 for r in settled)
    reserved = sum(r.reserved_micro for r in again)
    rollouts = sum(1 for r in settled if is_rollout(r))
    line = (
        f"{len(settled)} request(s) settled at {format_usd(counted)}, counted in the run's token "
        f"cost; the resume will send {len(again)} of them again (their answers were lost), "
        f"reserving {format_usd(reserved)} first"
    )
    if again:
        line += ": a request the provider did answer is paid twice"
    if rollouts:
        line += (
            f"; {rollouts} belonged to rollouts of accepted tasks, which a resume never runs "
            "again, so they are never sent again"
        )
    return line


def cleanup_command(run_id: str, out: Path | None, remove_work: bool) -> int:
    import asyncio
    import shutil

    console = make_console()
    with _owned_run(console, run_id, out) as owned:
        if owned is None:
            return EXIT_USAGE
        run, ledger = owned
        left = ledger.work(states=("running",))
        cleaned = 0
        for work in left:
            done, why = asyncio.run(stop_leftover(work, run))
            if done:
                ledger.end_work(work.id, "cleaned", {"cleaned_at": time.time(), "how": why})
                cleaned += 1
            else:
                error_line(console, f"trial {work.name} ({work.environment}) is not cleaned: {why}")
        roots = run.work_dir / "local-roots"
        with contextlib.suppress(OSError):
            roots.rmdir()  # only once empty: every trial root in it was removed by its receipt
        if remove_work and run.work_dir.is_dir():
            shutil.rmtree(run.work_dir, ignore_errors=True)
        console.print(
            f"closed {cleaned} of {len(left)} open worker receipt(s)"
            + ("; removed the working files" if remove_work else "")
        )
        return EXIT_OK if cleaned == len(left) else EXIT_USAGE


async def stop_leftover(work: WorkerReceipt, run: RunDir) -> tuple[bool, str]:
    """Stop and delete what one killed trial left, through its environment's own `stop`.

    The environment is rebuilt as Harbor's trial built it (the same task, the
    same session id, the same trial directory) and asked to stop with
    delete. The receipt may be closed only when the environment confirms:
    for Docker, no container of the trial's Compose project is left; for
    atoll-local, the trial's root under the run's local roots is gone.
    """
    from atoll.frontiersmith.trials import EnvironmentChoiceError, resolve_environment

    try:
        environment = resolve_environment(work.environment)
    except EnvironmentChoiceError as exc:
        return False, str(exc)
    task_dir = Path(str(work.detail.get("task_dir", "")))
    trial_dir = Path(str(work.detail.get("trial_dir", "")))
    if (task_dir / "task.toml").is_file():
        try:
            await _environment_stop(environment.config(), work.name, task_dir, trial_dir)
        except Exception as exc:  # the environment's own failure: report it, keep the receipt
            return False, f"{type(exc).__name__}: {exc}"[:300]
    if work.environment == "docker":
        project = str(work.detail.get("compose_project", ""))
        # the task is gone: the project's containers are removed by its label
        by_label = bool(project) and not (task_dir / "task.toml").is_file()
        left = _compose_project(project, remove=by_label)
        if left is None:
            return False, "the Docker engine does not answer, so nothing can be confirmed"
        if left:
            return False, f"{left} container(s) of Compose project {project} remain"
        return True, "docker compose down, no container left"
    if work.environment == "atoll-local":
        return _remove_local_root(work, run)
    if not (task_dir / "task.toml").is_file():
        return False, f"its task directory {task_dir} is gone: the environment cannot be rebuilt"
    return True, f"{work.environment}: the environment's stop(delete=True) returned"


def _remove_local_root(work: WorkerReceipt, run: RunDir) -> tuple[bool, str]:
    """Remove the one trial root the receipt names (inside this run's local roots), and confirm.

    A rebuilt atoll-local environment holds no root (its `stop` removes the
    root it made when it started, which died with the killed run), so the
    trial's own root folder, named in its receipt, is removed here.
    """
    import shutil

    roots = (run.work_dir / "local-roots").resolve()
    named = str(work.detail.get("local_root") or "")
    if not named:
        return False, (
            f"the receipt names no trial root; remove {roots} by hand once no trial of the run "
            "runs, or pass --remove-work"
        )
    root = Path(named).resolve()
    if root.parent != roots:
        return False, f"its trial root {root} is not in the run's local roots {roots}"
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():
        return False, f"its trial root {root} could not be removed"
    return True, f"atoll-local stop; the trial's root {root.name} removed"


async def _environment_stop(
    environment: dict[str, Any], name: str, task_dir: Path, trial_dir: Path
) -> None:
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.task.task import Task
    from harbor.models.trial.config import EnvironmentConfig
    from harbor.models.trial.paths import TrialPaths

    task = Task(task_dir)
    env = EnvironmentFactory.create_environment_from_config(
        config=EnvironmentConfig(**environment),
        environment_dir=task.paths.environment_dir,
        environment_name=task.short_name,
        session_id=f"{name}__env",
        trial_paths=TrialPaths(trial_dir),
        task_env_config=task.config.environment,
    )
    await env.stop(delete=True)


def _compose_containers(project: str) -> int | None:
    """How many containers of a Compose project exist (None: the engine cannot be asked)."""
    return _compose_project(project, remove=False)


def _remove_compose_project(project: str) -> int | None:
    """Remove the containers and networks of one Compose project (a trial of this run, by its
    receipt); how many containers are left (None: the engine cannot be asked)."""
    return _compose_project(project, remove=True)


def _compose_project(project: str, *, remove: bool) -> int | None:
    """One Compose project's containers, by its label, optionally removed first (with its
    networks); how many are left, or None when the Docker engine cannot be asked."""
    import re

    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        return None
    name = re.sub(r"[^a-z0-9_-]", "-", project.lower())
    labelled: dict[str, str | list[str] | bool] = {"label": f"com.docker.compose.project={name}"}
    try:
        client = docker.from_env(timeout=30)
    except DockerException:
        return None
    try:
        if remove:
            for container in client.containers.list(all=True, filters=labelled):
                with contextlib.suppress(DockerException):
                    container.remove(force=True)
            for network in client.networks.list(filters=labelled):
                with contextlib.suppress(DockerException):
                    network.remove()
        return len(client.containers.list(all=True, filters=labelled))
    except DockerException:
        return None
    finally:
        client.close()
