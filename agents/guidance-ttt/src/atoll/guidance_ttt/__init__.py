"""atoll.guidance_ttt: Guidance-TTT, test-time training of a guidance model as a Harbor agent.

The agent (`atoll.guidance_ttt.agent:GuidanceTTTAgent`, registered as
`guidance-ttt`) runs a whole search inside one trial: a PUCT archive picks
parents, a guidance model served through Reef proposes, a frozen executor
writes candidates, the FrontierCS judge scores them, and Reef trains on the
scores. Importing this package loads only atoll.core's light part; the agent's
modules load when Harbor asks for them, and the names below (its public face:
other distributions import these and no module of it) when first used. Besides
the agent, the settings and the task's contract at the top, the code lives in
`search`, `state`, `services`, `prompting` and `harbor` (the README's module
map says what each holds).
"""

from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.guidance_ttt.agent import agent_config
    from atoll.guidance_ttt.contract import load_task
    from atoll.guidance_ttt.services.wiring import run_search
    from atoll.guidance_ttt.state.resume import ResumeError
    from atoll.guidance_ttt.state.resume import load as load_resume

# What other distributions use (FrontierSmith runs a search-only Guidance-TTT on its
# bundles), imported on first use.
__getattr__ = exports(
    __name__,
    {
        "agent_config": "atoll.guidance_ttt.agent",
        "load_task": "atoll.guidance_ttt.contract",
        "ResumeError": "atoll.guidance_ttt.state.resume",
        "load_resume": "atoll.guidance_ttt.state.resume:load",
        "run_search": "atoll.guidance_ttt.services.wiring",
    },
)

__all__ = ["ResumeError", "agent_config", "load_resume", "load_task", "run_search"]
