"""atoll.guidance_ttt: Guidance-TTT, test-time training of a guidance model as a Harbor agent.

The agent (`atoll.guidance_ttt.agent:GuidanceTTTAgent`, registered as
`guidance-ttt`) runs a whole search inside one trial: a PUCT archive picks
parents, a guidance model served through Reef proposes, a frozen executor
writes candidates, the FrontierCS judge scores them, and Reef trains on the
scores. Importing this package loads nothing else; the agent's modules load
when Harbor asks for them. Besides the agent, the settings and the task's
contract at the top, the code lives in `search`, `state`, `services`,
`prompting` and `harbor` (the README's module map says what each holds).
"""
