"""atoll.pi: the Pi coding agent with its tools in hardened containers.

The `pi-docker` Harbor agent (`atoll.pi.agent`), the standalone rollout API
(`atoll.pi.rollout`), `atoll pi install|image build|run`, and Pi on Project
Euler (`atoll.pi.euler`, `atoll euler ...`). Importing this package loads
nothing else.
"""
