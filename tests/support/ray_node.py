"""`ray start`, held to loopback: the command each node of the tests' local Ray cluster runs.

On Linux Ray replaces 127.0.0.1 with the machine's routable address, so a
cluster meant for one machine would listen beyond it. With
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 in a process's environment Ray keeps
loopback, but `ray start --address` then refuses to start a worker node at
all. This entry point lets that one command start a node while every address
it resolves for itself stays 127.0.0.1; the node's own processes (raylet,
workers) inherit the environment and keep loopback by Ray's own rule.
"""

from __future__ import annotations

import sys


def main() -> int:
    from ray._private import ray_constants, services
    from ray.scripts.scripts import main as ray_cli

    ray_constants.ENABLE_RAY_CLUSTER = True
    services.node_ip_address_from_perspective = lambda address=None: "127.0.0.1"
    sys.argv[0] = "ray"
    ray_cli()
    return 0


if __name__ == "__main__":
    sys.exit(main())
