"""atoll.pi: the Pi coding agent with its tools in hardened containers.

The `pi-docker` Harbor agent (`atoll.pi.agent`), the standalone rollout API
(`atoll.pi.rollout`) and `atoll pi install|image build|run`. Pi on Project
Euler is a user of the rollout API in its own distribution, atoll-euler.
Importing this package loads nothing else.
"""
