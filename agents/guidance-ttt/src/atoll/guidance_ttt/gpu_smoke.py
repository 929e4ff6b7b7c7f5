"""One Guidance-TTT training step through a running Reef stack, for `scripts/gpu_smoke.sh`.

It samples the full G × R grid of step 0 through Reef with the same client the
agent uses, reports a reward per rollout that differs within each group (a
constant group would be dropped and nothing would train), and then waits at
the agent's own training barrier: Reef's `GET /reef/status` past step 0, and
the fail-closed gate on the real trainer's health (a finite non-zero grad
norm, LoRA-B moved, no trainable base parameter, the step's global batch,
the checkpoint marker on disk). A step number that advanced is not enough.
It exercises the stack, not the search: no executor and no judge are
involved.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

from atoll.core import reef_env
from atoll.guidance_ttt.config import load_config
from atoll.guidance_ttt.prompting.prompts import GUIDANCE_SYSTEM, Prompt
from atoll.guidance_ttt.search.scored_program import Status, Verification
from atoll.guidance_ttt.services.cancel import Cancellation
from atoll.guidance_ttt.services.reef_guidance import (
    GridSlot,
    GuidanceClient,
    ReefEndpoint,
    report_payload,
)
from atoll.guidance_ttt.services.training_barrier import (
    StepExpectation,
    TrainingBarrier,
    TrainingGateFailed,
    TrainingInvariantFailed,
    TrainingTimeout,
    scenario_progress,
)
from atoll.guidance_ttt.services.wiring import training_barrier

PROMPT = Prompt(
    GUIDANCE_SYSTEM,
    "<problem>Place as many unit squares as possible in a 4x4 box.</problem>\n"
    "Answer with exactly one terminal <guidance>...</guidance> block holding one strategy idea.",
)


def run_step(config_path: Path | None, reef_url: str | None, deadline_s: float) -> int:
    config = load_config(config_path)
    endpoint = ReefEndpoint.resolve(reef_url)
    scenario = f"gpu-smoke-{uuid.uuid4().hex[:8]}"
    client = GuidanceClient(
        endpoint,
        scenario=scenario,
        model=config.guidance_model,
        max_completion_tokens=config.max_guidance_tokens,
    )
    g, r = config.groups, config.rollouts
    # The trainer's starting health is the gate's origin: read it before the step is sampled.
    barrier = training_barrier(config, client, scenario, os.environ, Cancellation())
    barrier.start(0)
    started = time.monotonic()
    for group in range(g):
        for rollout in range(r):
            slot = GridSlot(0, group, rollout, g, r)
            sample = client.sample(PROMPT)
            reward = rollout / max(1, r - 1)
            verification = Verification(Status.VALID, reward, reward, "smoke")
            payload = report_payload(
                run_id=scenario, slot=slot, verification=verification, parent_id=group,
                search_value=reward, library_entry_id=None,
            )  # fmt: skip
            client.report(payload, sample.receipt)
            print(f"step 0 group {group} rollout {rollout}: receipt {sample.receipt}", flush=True)
    print(
        f"sampled and reported {g * r} rollouts in {time.monotonic() - started:.0f} s", flush=True
    )
    while time.monotonic() - started < deadline_s:
        progress = scenario_progress(client.status(), scenario)
        if progress is not None and progress.failed_steps:
            print(f"Reef lists failed steps {list(progress.failed_steps)}", file=sys.stderr)
            return 1
        if progress is not None and progress.scenario_step >= 1:
            print(f"Reef shows scenario {scenario} at step {progress.scenario_step} "
                  f"after {time.monotonic() - started:.0f} s", flush=True)  # fmt: skip
            return _gate(barrier, g, r)
        time.sleep(5)
    print(f"Reef did not train step 0 within {deadline_s:.0f} s", file=sys.stderr)
    return 1


def _gate(barrier: TrainingBarrier, groups: int, rollouts: int) -> int:
    """The agent's fail-closed gate on the trainer's own report of the step it just trained."""
    expected = StepExpectation(step=0, groups=groups, rollouts_per_group=rollouts,
                               rollouts=groups * rollouts, non_constant_groups=groups)  # fmt: skip
    try:
        commit = barrier.await_training(expected)
    except (TrainingGateFailed, TrainingInvariantFailed, TrainingTimeout) as exc:
        print(f"gpu_smoke: {exc}", file=sys.stderr)
        return 1
    if commit is None:
        print("gpu_smoke: nothing vouches for the update (the config's training is not on)",
              file=sys.stderr)  # fmt: skip
        return 1
    print(
        f"trained and gated: grad norm {commit.grad_norm}, LoRA-B L1 {commit.lora_b_l1} "
        f"({commit.lora_b_nonzero} non-zero), trainable base parameters "
        f"{commit.trainable_base_params}, checkpoint {commit.checkpoint_marker}",
        flush=True,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m atoll.guidance_ttt.gpu_smoke", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--config", type=Path, default=None, help="Guidance-TTT config file.")
    parser.add_argument(
        "--reef-url", default=None, help=f"Reef URL (default: ${reef_env.URL_ENV})."
    )
    parser.add_argument(
        "--deadline", type=float, default=1800.0, help="Seconds to wait for training."
    )
    args = parser.parse_args(argv)
    return run_step(args.config, args.reef_url, args.deadline)


if __name__ == "__main__":
    sys.exit(main())
