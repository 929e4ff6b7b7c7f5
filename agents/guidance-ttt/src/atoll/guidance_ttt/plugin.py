"""atoll-guidance-ttt's registrations with the atoll host: the `guidance-ttt` Harbor agent."""

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
            # guidance goes through Reef; GPUs only with training=on
            requires=("reef", "gpu"),
        )
    ]
