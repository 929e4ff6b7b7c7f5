"""atoll-reef-stack's registrations with the atoll host: the job plugin, `atoll stack`, a doctor check."""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration

# The job plugin's name, as agents name it in `StackUse` and `--plugin` names it.
JOB_PLUGIN = "reef-stack"
# Reef's server (and git-lfs, which it needs); GPUs only when it trains; no Reef that a
# killed job left holding a port and a token.
REQUIRES = ("reef", "git-lfs", "gpu", "orphan-reefs")


@hookimpl
def atoll_job_plugins() -> list[Registration]:
    return [
        Registration(
            JOB_PLUGIN,
            Kind.JOB_PLUGIN,
            "atoll.stack.job_plugin:ReefStackPlugin",
            "Starts Reef (+ Ray, Slime/Megatron, SGLang) for a job and stops it at the end.",
            requires=REQUIRES,
        )
    ]


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "stack",
            Kind.COMMAND,
            "atoll.stack.cli:app",
            "Render, start, inspect and stop the Reef stack an agent (e.g. Guidance-TTT) runs on.",
            requires=REQUIRES,
        )
    ]


@hookimpl
def atoll_doctor_checks() -> list[Registration]:
    return [
        Registration(
            "orphan-reefs",
            Kind.CHECK,
            "atoll.stack.orphans:doctor_check",
            "No Reef left running, or holding its token on disk, by a killed job.",
        )
    ]
