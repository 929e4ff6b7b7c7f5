"""training=tinker's batch: a step's exact samples, rewards and advantages, read from its journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atoll.guidance_ttt.search.archive import Rollout
from atoll.guidance_ttt.search.scored_program import Status, Verification
from atoll.guidance_ttt.services.reef_guidance import GuidanceSample, SampledTokens
from atoll.guidance_ttt.state.step_journal import FinishedRollout, StepJournal, StepState
from atoll.guidance_ttt.training.advantage import entropic_advantages
from atoll.guidance_ttt.training.batch import BatchUnavailable, batch_from_journal

STEP = 4


def _tokens(group: int, rollout: int) -> SampledTokens:
    """Distinct tokens per slot, with logprobs that JSON must carry exactly."""
    base = 100 * group + 10 * rollout
    return SampledTokens(
        prompt=(1, 2, base + 3),
        completion=(base + 4, base + 5, base + 6, 7),
        logprobs=(-0.1 * (rollout + 1), -1 / 3, -2.5e-7, -(group + 1) * 0.7),
        sampler=f"tinker://run/sampler-{STEP - 1}",
    )


def _sample(group: int, rollout: int, tokens: SampledTokens | None) -> GuidanceSample:
    return GuidanceSample(
        f"rcpt-{group}-{rollout}", "<guidance>g</guidance>", None, "stop", 4, tokens
    )


def _finished(
    group: int, rollout: int, status: Status, reward: float, receipt: str | None
) -> FinishedRollout:
    raw = reward if status is Status.VALID else None
    record = Rollout(STEP, group, rollout, 0, Verification(status, raw, reward))
    return FinishedRollout(record, receipt, None, {"agent_record_id": f"{group}-{rollout}"}, None)


def _sampled(
    journal: StepJournal,
    group: int,
    rollout: int,
    status: Status,
    reward: float,
    *,
    tokens: bool = True,
) -> None:
    journal.attempt(group, rollout, 1)
    sample = _sample(group, rollout, _tokens(group, rollout) if tokens else None)
    journal.guidance(group, rollout, 1, sample)
    journal.finished(_finished(group, rollout, status, reward, sample.receipt))


# Group 0: two sampled members with equal rewards and a failed guidance call (reward 0, no
# sample): constant, since the failed slot is not a member. Group 1: three distinct rewards,
# one of them malformed guidance (a member with reward 0), finished out of grid order.
GROUP1 = {0: (Status.VALID, 0.5), 1: (Status.GUIDANCE_REJECTED, 0.0), 2: (Status.VALID, 0.9)}


def _journal(tmp_path: Path, *, tokens_of_1_2: bool = True, finish_0_1: bool = True) -> StepState:
    journal = StepJournal(tmp_path, STEP)
    try:
        journal.selection(0, 11)
        journal.selection(1, 12)
        _sampled(journal, 0, 0, Status.VALID, 0.3)
        journal.attempt(0, 2, 1)
        journal.attempt_failed(0, 2, 1, answer_lost=False, error="HTTP 502")
        journal.finished(_finished(0, 2, Status.GUIDANCE_FAILED, 0.0, None))
        for rollout in (2, 0, 1):
            status, reward = GROUP1[rollout]
            tokens = tokens_of_1_2 or rollout != 2
            _sampled(journal, 1, rollout, status, reward, tokens=tokens)
        if finish_0_1:
            _sampled(journal, 0, 1, Status.VALID, 0.3)
        return journal.state()
    finally:
        journal.close()


def test_the_batch_trains_the_exact_samples_of_non_constant_groups(tmp_path: Path) -> None:
    batch = batch_from_journal(_journal(tmp_path), groups=2, rollouts=3)
    assert batch.step == STEP
    assert batch.failed_slots == [[0, 2]]
    assert [g.group for g in batch.groups] == [0, 1]

    constant, varied = batch.groups
    assert constant.constant and not varied.constant
    assert [m.rollout for m in constant.members] == [0, 1]
    assert [m.reward for m in constant.members] == [0.3, 0.3]
    assert batch.non_constant_groups == 1

    # Group 1 in grid order, whatever the order its rollouts finished in.
    assert [m.rollout for m in varied.members] == [0, 1, 2]
    assert [m.reward for m in varied.members] == [0.5, 0.0, 0.9]
    assert [m.status for m in varied.members] == ["valid", "guidance_rejected", "valid"]
    expected = entropic_advantages([0.5, 0.0, 0.9])
    assert varied.beta == expected.beta
    assert tuple(m.advantage for m in varied.members) == expected.advantages
    assert constant.beta == entropic_advantages([0.3, 0.3]).beta

    datums = batch.datums()
    assert [m.rollout for m in batch.trained] == [0, 1, 2]
    assert len(datums) == 3
    for datum, rollout, advantage in zip(datums, (0, 1, 2), expected.advantages, strict=True):
        tokens = _tokens(1, rollout)
        assert datum == {
            "prompt_tokens": list(tokens.prompt),
            "completion_tokens": list(tokens.completion),
            "logprobs": list(tokens.logprobs),
            "advantage": advantage,
        }
    assert batch.samplers() == {f"tinker://run/sampler-{STEP - 1}"}


def test_the_batch_metrics_and_record(tmp_path: Path) -> None:
    batch = batch_from_journal(_journal(tmp_path), groups=2, rollouts=3)
    advantages = entropic_advantages([0.5, 0.0, 0.9]).advantages
    metrics = batch.metrics()
    assert metrics["non_constant_groups"] == 1
    assert metrics["trained_samples"] == 3
    # The failed slot has no member, so no reward here.
    assert metrics["reward_mean"] == pytest.approx((0.3 + 0.3 + 0.5 + 0.0 + 0.9) / 5)
    assert metrics["reward_max"] == 0.9
    assert metrics["advantage_min"] == min(advantages)
    assert metrics["advantage_max"] == max(advantages)
    assert metrics["advantage_mean"] == pytest.approx(sum(advantages) / 3)
    assert metrics["betas"] == [g.beta for g in batch.groups]

    record = json.loads(json.dumps(batch.to_json()))
    assert record["step"] == STEP
    assert record["failed_slots"] == [[0, 2]]
    assert [g["constant"] for g in record["groups"]] == [True, False]
    member = record["groups"][1]["members"][2]
    assert member["rollout"] == 2 and member["reward"] == 0.9
    assert member["completion"] == list(_tokens(1, 2).completion)
    assert member["logprobs"] == list(_tokens(1, 2).logprobs)


def test_a_step_with_only_constant_groups_trains_nothing(tmp_path: Path) -> None:
    journal = StepJournal(tmp_path, STEP)
    for rollout in range(2):
        _sampled(journal, 0, rollout, Status.VALID, 0.4)
    journal.close()
    batch = batch_from_journal(journal.state(), groups=1, rollouts=2)
    assert batch.non_constant_groups == 0
    assert batch.datums() == []
    assert batch.failed_slots == []
    assert all(abs(m.advantage) < 1e-9 for m in batch.groups[0].members)
    assert batch.metrics()["advantage_mean"] is None


def test_a_sample_without_tokens_cannot_be_trained(tmp_path: Path) -> None:
    state = _journal(tmp_path, tokens_of_1_2=False)
    with pytest.raises(BatchUnavailable, match="group 1, rollout 2 carries no sampled tokens"):
        batch_from_journal(state, groups=2, rollouts=3)


def test_a_slot_without_a_result_cannot_be_trained(tmp_path: Path) -> None:
    state = _journal(tmp_path, finish_0_1=False)
    with pytest.raises(BatchUnavailable, match=r"slot \(group 0, rollout 1\) has no result"):
        batch_from_journal(state, groups=2, rollouts=3)
