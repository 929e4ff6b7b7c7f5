"""atoll-guidance-ttt's registrations with the atoll host: the `guidance-ttt` Harbor agent and
`atoll guidance`."""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration, StackUse


@hookimpl
def atoll_agents() -> list[Registration]:
    return [
        Registration(
            "guidance-ttt",
            Kind.AGENT,
            "atoll.guidance_ttt.agent:GuidanceTTTAgent",
            "Test-time training of a guidance model through Reef: a PUCT search over "
            "scored programs, one whole run per trial.",
            # `atoll run` adds, when no --plugin is given, Reef's stack and what the scorer the
            # task's contract.json names needs (the judge for a FrontierCS task, none for a
            # checker task; contract.json's default scorer is the judge).
            task_scorer="frontiercs-judge",
            # Reef's stack, configured by the agent's own reading of its options (a mapping).
            stack=StackUse("reef-stack", "atoll.guidance_ttt.agent:stack_settings"),
            # Its options checked by every job plugin before anything starts.
            settings="atoll.guidance_ttt.agent:agent_config",
            # guidance goes through Reef; GPUs only with training=on; the managed Tinker
            # environment and a key only with training=tinker
            requires=("reef", "gpu", "tinker-training"),
        )
    ]


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "guidance",
            Kind.COMMAND,
            "atoll.guidance_ttt.explore.cli:app",
            "Guidance-TTT runs: `explore` writes one self-contained HTML page of a run's "
            "scores, archive tree and rollouts.",
        )
    ]


@hookimpl
def atoll_doctor_checks() -> list[Registration]:
    return [
        Registration(
            "tinker-training",
            Kind.CHECK,
            "atoll.guidance_ttt.doctor:check_tinker_training",
            "What Guidance-TTT's training=tinker needs: atoll-pi-train's managed Tinker "
            "environment and TINKER_API_KEY.",
        )
    ]
