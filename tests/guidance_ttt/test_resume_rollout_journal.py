"""The step journal read back after a crash: reuse, re-post and orphans."""

from __future__ import annotations

import pytest

from atoll.guidance_ttt.search.archive import Rollout
from atoll.guidance_ttt.search.scored_program import Status, Verification
from atoll.guidance_ttt.services.reef_guidance import GuidanceSample
from atoll.guidance_ttt.state.run_dir import step_journal_path
from atoll.guidance_ttt.state.step_journal import (
    FinishedRollout,
    RolloutJournalError,
    StepJournal,
    read_step,
)


def _sample(receipt: str) -> GuidanceSample:
    return GuidanceSample(receipt, "<guidance>g</guidance>", None, "stop", 5)


def _finished(group: int, rollout: int, receipt: str) -> FinishedRollout:
    record = Rollout(3, group, rollout, 0, Verification(Status.INVALID, None, 0.0, "overlap"))
    return FinishedRollout(
        record, receipt, None, {"agent_record_id": f"id-{group}-{rollout}"}, None
    )


def test_journal_state_names_what_to_reuse_repost_and_orphan(tmp_path):
    journal = StepJournal(tmp_path, 3)
    journal.selection(0, 5)
    # Slot (0, 0): sampled, finished and acknowledged.
    journal.attempt(0, 0, 1)
    journal.guidance(0, 0, 1, _sample("rcpt-a"))
    journal.finished(_finished(0, 0, "rcpt-a"))
    journal.acknowledged(0, 0, "id-0-0")
    # Slot (0, 1): finished, report not acknowledged.
    journal.attempt(0, 1, 1)
    journal.guidance(0, 1, 1, _sample("rcpt-b"))
    journal.finished(_finished(0, 1, "rcpt-b"))
    # Slot (0, 2): answer lost once, then sampled; not finished.
    journal.attempt(0, 2, 1)
    journal.attempt_failed(0, 2, 1, answer_lost=True, error="timed out")
    journal.attempt(0, 2, 2)
    journal.guidance(0, 2, 2, _sample("rcpt-c"))
    # Slot (0, 3): Reef refused (no receipt: nothing to name), then the crash cut a call off.
    journal.attempt(0, 3, 1)
    journal.attempt_failed(0, 3, 1, answer_lost=False, error="HTTP 502")
    journal.attempt(0, 3, 2)
    journal.close()

    state = read_step(step_journal_path(tmp_path, 3), 3)
    assert state.selections == {0: 5}
    assert set(state.finished) == {(0, 0), (0, 1)}
    assert [d.rollout.rollout for d in state.unacknowledged()] == [1]
    assert state.samples[(0, 2)].receipt == "rcpt-c"
    assert state.attempts == {(0, 0): 1, (0, 1): 1, (0, 2): 2, (0, 3): 2}
    orphans = [(o.group, o.rollout, o.attempt, o.error) for o in state.orphans]
    assert orphans == [(0, 2, 1, "timed out"), (0, 3, 2, "interrupted by a crash")]


def test_a_torn_last_line_is_ignored_and_cut_off(tmp_path):
    journal = StepJournal(tmp_path, 0)
    journal.attempt(0, 0, 1)
    journal.guidance(0, 0, 1, _sample("r1"))
    journal.close()
    path = step_journal_path(tmp_path, 0)
    with open(path, "ab") as handle:
        handle.write(b'{"kind": "finished", "step": 0, "gr')
    assert read_step(path, 0).samples[(0, 0)].receipt == "r1"
    reopened = StepJournal(tmp_path, 0)
    reopened.acknowledged(0, 0, "x")
    reopened.close()
    assert read_step(path, 0).acknowledged == {(0, 0)}


def test_a_record_of_another_step_is_refused(tmp_path):
    journal = StepJournal(tmp_path, 1)
    journal.selection(0, 1)
    journal.close()
    path = step_journal_path(tmp_path, 1)
    with pytest.raises(RolloutJournalError, match="a record of step 1 in step 2"):
        read_step(path, 2)
