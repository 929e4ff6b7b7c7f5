"""One Guidance-TTT run in a process of its own, so that a test can kill it anywhere and resume it.

`python run_driver.py ARGS.json` builds the run the way the Harbor agent does
(the agent's config, seed, bridge and client helpers; the real Reef, executor
and judge clients) and runs the controller to the configured final step. A
run that cannot start or continue prints one line to stderr and exits 2.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from atoll.guidance_ttt import controller, resume
from atoll.guidance_ttt.agent import agent_config, training_bridge
from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.executor import Executor, executor_spec
from atoll.guidance_ttt.guidance import GuidanceClient, ReefEndpoint
from atoll.guidance_ttt.scorer import Scorer
from atoll.guidance_ttt.seed import read_seed


def run(args: Mapping[str, Any], environ: Mapping[str, str]) -> controller.RunResult:
    """Run (or resume) the run that `args` describes; see the tests for its keys."""
    config = agent_config(args["settings"])
    task_dir = Path(args["task_dir"])
    task = load_task(task_dir)
    guidance = GuidanceClient(
        ReefEndpoint(args["reef_url"], environ["REEF_TOKEN"]),
        scenario=args["scenario"],
        model="scripted",
        max_completion_tokens=config.max_guidance_tokens,
        timeout_s=60.0,
        backoff_s=0.01,
    )
    executor = Executor(
        executor_spec(
            config.executor_preset,
            base_url=config.executor_base_url,
            model=config.executor_model,
            max_completion_tokens=config.max_executor_tokens,
        ),
        environ=environ,
    )
    scorer = Scorer(args["judge_url"], task.contract, deadline_s=120, poll_interval_s=0.05)
    try:
        scorer.check()
        fresh = resume.load(config.state_dir) is None
        seed = read_seed(task_dir, task.contract, scorer if fresh else None)
        return controller.run(
            config,
            task,
            seed,
            guidance=guidance,
            executor=executor,
            scorer=scorer,
            bridge=training_bridge(config, guidance),
            scenario=args["scenario"],
            console=Console(stderr=True, width=120),
        )
    finally:
        scorer.close()


def main() -> int:
    args = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    try:
        result = run(args, os.environ)
    except Exception as exc:  # one line, as a user would see it
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"steps": len(result.summaries)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
