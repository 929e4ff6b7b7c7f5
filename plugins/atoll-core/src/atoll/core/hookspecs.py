"""The hooks an atoll plugin may implement (pluggy project name `atoll`).

Each hook returns a list of `Registration` records and nothing else; the host
merges them. A plugin implements only the hooks it needs.
"""

from __future__ import annotations

import pluggy

from atoll.core.records import Registration

PROJECT = "atoll"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def atoll_agents() -> list[Registration]:
    """Harbor agents, by short name and `module:Class` import path."""


@hookspec
def atoll_environments() -> list[Registration]:
    """Harbor environments, by short name and import path."""


@hookspec
def atoll_verifiers() -> list[Registration]:
    """Harbor verifiers, by short name and import path."""


@hookspec
def atoll_task_sources() -> list[Registration]:
    """Local Harbor task directories, by short name and path."""


@hookspec
def atoll_emitters() -> list[Registration]:
    """Task emitters, run as `atoll emit <name>`."""


@hookspec
def atoll_job_plugins() -> list[Registration]:
    """Harbor job plugins (also registered under `harbor.plugins`)."""


@hookspec
def atoll_commands() -> list[Registration]:
    """Sub-commands of `atoll`; the target is a Typer app."""


@hookspec
def atoll_doctor_checks() -> list[Registration]:
    """Requirements `atoll doctor` checks, by name; the target returns an `atoll.core.doctor.Finding`."""


@hookspec
def atoll_scorers() -> list[Registration]:
    """Scorers of candidate programs, by the name a task's contract gives (`scorer`).

    The target is a `module:function` taking an `atoll.core.scoring.ScorerSetup`
    and returning a context manager that yields an `atoll.core.scoring.CandidateScorer`.
    """
