"""One training step of training=tinker moves the policy the way its advantages say.

On the local Tinker server (SkyRL tx on CPU) with the tiny model and a rank-8
LoRA: R completions of one prompt are sampled through the run's policy server
at temperature 1, given distinct rewards, and trained on with one
importance-sampling step. Δ_i, the change of sample i's summed completion
logprob under the new sampler, must follow the advantages (Σ A_i·Δ_i > 0),
and the controls must hold: zero advantages change nothing, negated
advantages flip the sign, and the saved state reloaded (with its optimizer)
reproduces the new logprobs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.ports import free_port

from atoll.guidance_ttt.services.cancel import Cancellation
from atoll.guidance_ttt.training.advantage import entropic_advantages
from atoll.guidance_ttt.training.tinker_policy import (
    PolicySettings,
    PolicyStart,
    TinkerPolicy,
    serving_policy,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]  # its first test pays for the guidance model

SAMPLES = 8
MAX_TOKENS = 12
LEARNING_RATE = 1e-3
PROMPT = [{"role": "user", "content": "Propose one strategy for packing polyominoes."}]


@contextmanager
def policy(
    env: dict[str, str], base_model: Path, log: Path, start: PolicyStart | None = None
) -> Iterator[TinkerPolicy]:
    settings = PolicySettings(
        base_model=str(base_model),
        renderer="qwen3",
        tinker_url=env["TINKER_BASE_URL"],
        lora_rank=8,
        port=free_port(),
        served_name="tiny",
    )
    start = start or PolicyStart(0, None, None, f"base:{base_model}")
    with serving_policy(settings, start, log, {**os.environ, **env}, Cancellation()) as served:
        yield served


def sample(served: TinkerPolicy) -> list[dict[str, Any]]:
    body = {"model": "tiny", "messages": PROMPT, "max_completion_tokens": MAX_TOKENS}
    found = []
    for _ in range(SAMPLES):
        answer = httpx.post(f"{served.url}/v1/chat/completions", json=body, timeout=300).json()
        choice = answer["choices"][0]
        found.append(
            {
                "prompt_tokens": answer["prompt_token_ids"],
                "completion_tokens": choice["token_ids"],
                "logprobs": [entry["logprob"] for entry in choice["logprobs"]["content"]],
            }
        )
    return found


def train(
    served: TinkerPolicy, samples: list[dict[str, Any]], advantages: list[float]
) -> dict[str, Any]:
    return served.train(
        {
            "step": 0,
            "name": f"moves-{os.getpid()}-{free_port()}",
            "datums": [{**s, "advantage": a} for s, a in zip(samples, advantages, strict=True)],
            "learning_rate": LEARNING_RATE,
            "kl_coef": 0.0,
            "per_sequence_mean": True,
        }
    )


def sums(served: TinkerPolicy, samples: list[dict[str, Any]]) -> list[float]:
    return served.logprob_sums([(s["prompt_tokens"], s["completion_tokens"]) for s in samples])


def test_one_step_moves_the_policy_along_its_advantages(
    tmp_path: Path, server_env: dict[str, str], tiny_model: Path
) -> None:
    rewards = [float(i) for i in range(SAMPLES)]
    advantages = list(entropic_advantages(rewards).advantages)
    with policy(server_env, tiny_model, tmp_path / "a.log") as served:
        samples = sample(served)
        before = sums(served, samples)
        sampled = [sum(s["logprobs"]) for s in samples]
        assert before == pytest.approx(sampled, abs=1e-3)
        answer = train(served, samples, advantages)
        after = sums(served, samples)
    deltas = [b - a for a, b in zip(before, after, strict=True)]
    assert answer["trained_steps"] == 1 and answer["metrics"]["updated"] is True
    assert sum(a * d for a, d in zip(advantages, deltas, strict=True)) > 0
    up = [d for a, d in zip(advantages, deltas, strict=True) if a > 0]
    down = [d for a, d in zip(advantages, deltas, strict=True) if a < 0]
    assert sum(up) / len(up) > sum(down) / len(down)

    # The saved state, reloaded with its optimizer, holds exactly the new weights.
    start = PolicyStart(1, answer["state_path"], None, answer["sampler_path"])
    with policy(server_env, tiny_model, tmp_path / "b.log", start) as reloaded:
        assert reloaded.status()["trained_steps"] == 1
        assert sums(reloaded, samples) == pytest.approx(after, abs=1e-4)

    # Negated advantages move the same samples the other way, from the same start.
    with policy(server_env, tiny_model, tmp_path / "c.log") as served:
        before = sums(served, samples)
        train(served, samples, [-a for a in advantages])
        flipped = [b - a for a, b in zip(before, sums(served, samples), strict=True)]
    assert sum(a * d for a, d in zip(advantages, flipped, strict=True)) < 0


def test_zero_advantages_change_nothing(
    tmp_path: Path, server_env: dict[str, str], tiny_model: Path
) -> None:
    with policy(server_env, tiny_model, tmp_path / "zero.log") as served:
        samples = sample(served)[:4]
        before = sums(served, samples)
        answer = train(served, samples, [0.0] * len(samples))
        assert answer["metrics"]["updated"] is True
        assert sums(served, samples) == before
