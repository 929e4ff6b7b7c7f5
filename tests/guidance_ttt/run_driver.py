"""One Guidance-TTT run in a process of its own, so that a test can kill it anywhere and resume it.

`python run_driver.py ARGS.json` starts the run the way the Harbor agent does
(the agent's config, then `wiring.run_search`: the run's name, seed and
services, the real Reef, executor and judge clients) and runs it to the
configured final step. A run that cannot start or continue prints one line to
stderr and exits 2.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from atoll.guidance_ttt.agent import agent_config
from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.search import controller
from atoll.guidance_ttt.services.wiring import run_search


def run(args: Mapping[str, Any], environ: Mapping[str, str]) -> controller.RunResult:
    """Run (or resume) the run that `args` describes; see the tests for its keys.

    `environ` overlays the process environment, as Harbor's agent environment
    overlays the agent's; the executor's key and Reef's token are read there.
    """
    task_dir = Path(args["task_dir"])
    return run_search(
        agent_config(args["settings"]),
        load_task(task_dir),
        task_dir,
        environ={
            **os.environ,
            **environ,
            "REEF_URL": args["reef_url"],
            "FRONTIERCS_JUDGE_URL": args["judge_url"],
        },
        console=Console(stderr=True, width=120),
    )


def main() -> int:
    args = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    try:
        result = run(args, {})
    except Exception as exc:  # one line, as a user would see it
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"steps": len(result.summaries)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
