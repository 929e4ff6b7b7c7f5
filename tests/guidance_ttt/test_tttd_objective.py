"""atoll's TTT-Discover objective for Reef: registered as Reef's loss families are, its numbers by hand.

The objective is the backend-neutral half (one advantage per trajectory);
the Slime family is what the training driver checks; the worker hooks are
where Slime finds them. The tensor formulas run in torch, which only
pi-train's managed environment has here: they are checked there against
the standard-library arithmetic the Tinker path trains with.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from reef.core.batches import TrainingBatch, TrajectoryItem
from reef.recipe.base import WeightTrainingSpec
from reef.train.algos.registry import loss_family_refs, resolve_objective
from reef.train.slime_backend.algorithm import _objective_registry
from reef.train.slime_backend.loss_families import resolve_loss_family
from support import ci

from atoll.guidance_ttt.training import advantage
from atoll.guidance_ttt.tttd import names
from atoll.guidance_ttt.tttd.objective import TttdObjective
from atoll.guidance_ttt.tttd.slime import TttdAlgorithm

BETA_BOUND = 2.0**20


def _trajectory(group: str, reward: float) -> TrajectoryItem:
    document = {
        "schema_version": "ATIF-v1.4",
        "session_id": f"{group}-{reward}",
        "agent": {"name": "guidance", "version": "1"},
        "steps": [{"step_id": 1, "source": "agent", "message": "<guidance>x</guidance>"}],
        "extra": {"reef": {"reward": reward}},
    }
    return TrajectoryItem(document, group_id=group)


def _batch(*groups: list[float]) -> TrainingBatch:
    items = tuple(_trajectory(str(g), r) for g, rewards in enumerate(groups) for r in rewards)
    return TrainingBatch("scenario:tttd:0", items)


def test_the_recipe_objective_names_the_slime_family_that_reef_resolves() -> None:
    assert resolve_objective(names.LOSS_FAMILY) is resolve_objective(names.OBJECTIVE)
    assert WeightTrainingSpec(objective=names.LOSS_FAMILY).loss_family == names.LOSS_FAMILY
    assert loss_family_refs()[names.LOSS_FAMILY] == names.SLIME_SPEC
    spec = resolve_loss_family(names.LOSS_FAMILY)
    assert isinstance(spec, TttdAlgorithm)
    assert (spec.loss_type, spec.requires_rollout_logprobs, spec.advantages) == (
        "custom_loss", True, "required"
    )  # fmt: skip


def test_the_worker_finds_both_hooks_at_the_paths_the_stack_renders() -> None:
    import atoll.guidance_ttt.tttd.slime.objective as hooks

    module = hooks.__name__
    registered = _objective_registry[module]
    assert {f"{module}.{function}" for function in registered.values()} == {
        names.LOSS_HOOK, names.ADVANTAGE_HOOK
    }  # fmt: skip
    assert set(TttdAlgorithm.required_objective_hooks) == set(registered)


def test_advantages_by_hand_group_by_group() -> None:
    # Group 0: two rewards 1e-6 apart leave the KL below ln 2 even at the bound β = 2**20,
    # so A = (e^{-x} − 1, e^{x} − 1) with x = 2**20 · 1e-6.
    # Group 1: the worse of two distinct rewards gets −1, the better 1/1e-12 − 1.
    # Group 2: equal rewards: A = 1/(1 + 1e-12) − 1 ≈ −1e-12 each (the reference's epsilon).
    signal = TttdObjective().prepare(_batch([0.0, 1e-6], [0.0, 1.0], [0.5, 0.5]), {"steps": 3})
    x = BETA_BOUND * 1e-6
    expected = [math.exp(-x) - 1.0, math.exp(x) - 1.0, -1.0, 1e12, -1e-12, -1e-12]
    assert signal.action == "train"
    assert list(signal.advantages or ()) == pytest.approx(expected, rel=1e-5, abs=1e-15)
    assert signal.next_algorithm_state == {"steps": 4}
    betas = signal.metrics["adaptive_betas"]
    assert betas[0] == BETA_BOUND and betas[2] == BETA_BOUND and 0 < betas[1] <= BETA_BOUND
    assert signal.metrics["constant_groups_retained"] == 0


def test_a_batch_of_one_constant_group_trains_as_the_reference_does() -> None:
    signal = TttdObjective().prepare(_batch([2.0, 2.0, 2.0]), {})
    assert signal.action == "train"
    assert signal.metrics["constant_groups_retained"] == 1
    assert max(abs(a) for a in signal.advantages or ()) < 1e-11


def test_the_objective_computes_what_the_tinker_path_computes() -> None:
    rewards = [[0.1, 0.4, 0.9], [-3.0, 2.5, 0.75, 0.7, 2.4]]
    signal = TttdObjective().prepare(_batch(*rewards), {})
    shared = [a for group in rewards for a in advantage.entropic_advantages(group).advantages]
    assert list(signal.advantages or ()) == shared


TENSOR_CHECK = r"""
import importlib.util, json, sys, torch
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec); sys.modules[name] = module
    spec.loader.exec_module(module); return module
tensors = load("tensors", sys.argv[1]); shared = load("advantage", sys.argv[2])
torch.manual_seed(7)
lengths = [3, 5, 2]
sampled = [torch.randn(n) - 1 for n in lengths]
base = [torch.randn(n) - 1 for n in lengths]
masks = [torch.ones(n) for n in lengths]
advantages = [torch.full((n,), a) for n, a in zip(lengths, [0.5, -1.0, 2.0])]
differences, total, count = tensors.log_ratio_sums(sampled, base, masks)
shaped = tensors.kl_shaped_advantages(advantages, differences, masks, total / count, 0.1)
expected, mean = shared.kl_shaped([a.tolist() for a in advantages], [s.tolist() for s in sampled],
                                  [b.tolist() for b in base], 0.1)
masked = [torch.tensor([1.0, 0.0, 1.0]), torch.ones(5), torch.tensor([0.0, 0.0])]
d2, t2, c2 = tensors.log_ratio_sums(sampled, base, masked)
kept = tensors.kl_shaped_advantages(advantages, d2, masked, t2 / c2, 0.1)
log_probs = sampled[1].clone().requires_grad_(True)
loss = tensors.importance_sampling_loss(log_probs, sampled[1], advantages[1]).sum()
loss.backward()
print(json.dumps({
    "shaped": [s.tolist() for s in shaped], "expected": expected,
    "mean": float(total / count), "expected_mean": mean,
    "unmasked": [kept[0][1].item(), kept[2].tolist()],
    "masked_count": float(c2), "grad": log_probs.grad.tolist(), "advantage": advantages[1].tolist(),
}))
"""


@pytest.mark.slow
def test_the_torch_formulas_agree_with_the_arithmetic_the_tinker_path_trains_with(
    tmp_path: Path,
) -> None:
    from atoll.pi_train import installed_managed_env

    env = installed_managed_env()
    if env is None:
        pytest.fail("pi-train's managed environment is not installed: run `atoll tinker install`")
    import atoll.guidance_ttt.tttd.slime as slime

    tensors = Path(slime.__file__).parent / "tensors.py"
    script = tmp_path / "check.py"
    script.write_text(TENSOR_CHECK)
    done = subprocess.run(
        [str(env.python), str(script), str(tensors), advantage.__file__],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for row, expected in zip(out["shaped"], out["expected"], strict=True):
        assert row == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert out["mean"] == pytest.approx(out["expected_mean"], rel=1e-5)
    # Masked-out tokens keep Reef's advantage; only the 2 + 5 masked-in tokens make the mean.
    assert out["unmasked"] == [0.5, [2.0, 2.0]]
    assert out["masked_count"] == 7.0
    # At logp = logq the importance-sampling loss's gradient is the plain policy gradient, −A.
    assert out["grad"] == pytest.approx([-a for a in out["advantage"]])


def test_the_recipe_says_it_needs_the_reef_checkout_when_it_is_not_on_the_path() -> None:
    import importlib
    import sys

    ci.need(importlib.util.find_spec("recipes") is None, "a Reef checkout is on the path")
    sys.modules.pop("atoll.guidance_ttt.tttd.recipe", None)
    with pytest.raises(ImportError, match="extends Reef's tttd recipe from a Reef source checkout"):
        importlib.import_module("atoll.guidance_ttt.tttd.recipe")
