"""atoll-frontiercs-judge's registrations with the atoll host.

The Harbor verifier `frontiercs-judge` and the `atoll judge` command; both
need a C++ compiler and bubblewrap on the machine that judges.
"""

from __future__ import annotations

from pathlib import Path

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration
from atoll.core.task_dirs import packaged_task_dir

REQUIRES = ("g++", "bwrap")


@hookimpl
def atoll_verifiers() -> list[Registration]:
    return [
        Registration(
            "frontiercs-judge",
            Kind.VERIFIER,
            "atoll.judge.verifier:FrontierCSJudgeVerifier",
            "Score a C++ candidate with the FrontierCS judge (remote or embedded).",
            requires=REQUIRES,
        )
    ]


@hookimpl
def atoll_job_plugins() -> list[Registration]:
    return [
        Registration(
            "frontiercs-judge",
            Kind.JOB_PLUGIN,
            "atoll.judge.job_plugin:FrontierCSJudgePlugin",
            "Uses the judge FRONTIERCS_JUDGE_URL names, or runs the embedded judge for the job.",
            requires=REQUIRES,
        )
    ]


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "judge",
            Kind.COMMAND,
            "atoll.judge.cli:app",
            "Serve the embedded FrontierCS judge, score a program by hand, list the problems.",
            requires=REQUIRES,
        ),
        Registration(
            "task",
            Kind.COMMAND,
            "atoll.judge.task_cli:app",
            "Harbor's task commands, and a FrontierCS problem as a Harbor task: "
            "atoll task frontiercs ID --out DIR.",
            extends_harbor=True,
            requires=REQUIRES,
        ),
    ]


# --- the polyomino_packing task (the task directory lives in tasks/ at the repository root) ---

TASK_NAME = "polyomino_packing"


@hookimpl
def atoll_task_sources() -> list[Registration]:
    return [
        Registration(
            TASK_NAME,
            Kind.TASK,
            str(task_dir(TASK_NAME)),
            "Pack polyominoes into the smallest rectangle (FrontierCS problem 0), C++17, judged.",
            # its verifier scores through the judge's socket, which the plugin provides
            job_plugins=("frontiercs-judge",),
        ),
        Registration(
            "frontiercs/",
            Kind.TASK,
            "atoll.judge.task_source:resolve",
            "frontiercs/<ID>: any problem of the FrontierCS checkout FRONTIERCS_HOME names, "
            "written as a task on first use.",
            job_plugins=("frontiercs-judge",),
            dynamic=True,
        ),
    ]


def task_dir(name: str) -> Path:
    """The task's copy packaged in the wheel, or the repository's in an editable install."""
    return packaged_task_dir("atoll.judge", name, Path(__file__).resolve().parents[5])


@hookimpl
def atoll_scorers() -> list[Registration]:
    return [
        Registration(
            "frontiercs-judge",
            Kind.SCORER,
            "atoll.judge.scorer:open_judge_scorer",
            "Score a search's candidates with the FrontierCS judge FRONTIERCS_JUDGE_URL names, "
            "else an embedded one.",
            requires=REQUIRES,
            # a run searching with it gets the job's judge (`atoll run` adds the plugin)
            job_plugins=("frontiercs-judge",),
        )
    ]
