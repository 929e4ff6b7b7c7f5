"""One search step end to end: guidance through the real Reef, a scripted executor, the real judge."""

from __future__ import annotations

import uuid

import pytest
from support.guidance_run import (
    ExecutorScript,
    GuidanceScript,
    new_library,
    step_context,
    write_task,
)
from support.openai_server import Reply, numbered

from atoll.guidance_ttt.search.scored_program import Status
from atoll.guidance_ttt.search.step import GridIncomplete, Limits, StepFailed, run_step
from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]


def _scenario() -> str:
    return f"step-{uuid.uuid4().hex[:8]}"


@pytest.mark.slow
def test_a_step_samples_once_per_rollout_and_reports_every_slot(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = GuidanceScript(malformed_every=4)
    scripted_llm.script = ExecutorScript(broken_every=3)
    before = len(reset_reef_upstream.chat_requests())
    task = write_task(tmp_path / "task")
    library = new_library(tmp_path / "state", task, groups=2)
    scenario = _scenario()
    context = step_context(
        task=task,
        library=library,
        reef_server=reef_server,
        scenario=scenario,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        groups=2,
        rollouts=3,
    )
    stages: dict[str, int] = {}
    summary = run_step(
        context, 0, lambda stage, n: stages.__setitem__(stage, stages.get(stage, 0) + n)
    )

    guidance_calls = reset_reef_upstream.chat_requests()[before:]
    executor_calls = scripted_llm.chat_requests()
    assert len(guidance_calls) == 6
    assert len(executor_calls) == 5  # the malformed guidance never reaches the executor
    assert stages == {"guidance": 6, "executor": 5, "judged": 6, "reported": 6}
    assert summary.sampled == 6
    assert summary.well_formed_guidance == 5
    assert summary.valid == 4  # executor answers 1, 2, 4, 5 compile; 3 does not
    assert summary.orphans == []
    assert summary.best_raw_score is not None and summary.best_raw_score > 0
    # The guidance model never sees code; the executor sees the parent's.
    assert all("#include" not in c.body["messages"][-1]["content"] for c in guidance_calls)
    assert all("#include" in c.body["messages"][-1]["content"] for c in executor_calls)

    inferences = reef_server.records(scenario, "inference")
    reports = reef_server.records(scenario, "report")
    assert len(inferences) == 6 and len(reports) == 6
    receipts = {r["agent_record_id"] for r in inferences}
    assert {ref for r in reports for ref in r["references"]} == receipts
    slots, statuses = set(), []
    for report in reports:
        payload = reef_server.record(scenario, report["agent_record_id"])["payload"]
        meta = payload["metadata"]
        slots.add((meta["group"], meta["rollout"]))
        assert meta["comparison_set"] == f"tttd-step-0-group-{meta['group']}"
        assert meta["parent_id"] == library.archive.selections[meta["group"]]
        statuses.append(payload["feedback"].split(":")[0])
    assert slots == {(g, r) for g in range(2) for r in range(3)}
    assert sorted(statuses) == sorted(["guidance_rejected", "compile_error"] + ["valid"] * 4)
    assert library.archive.total_rollouts == 6
    library.close()


@pytest.mark.slow
def test_an_executor_outage_stops_the_step_and_a_resume_finishes_it_without_resampling(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = GuidanceScript()
    healthy = ExecutorScript()
    # The third executor call and every later one fail: the executor's server is down.
    scripted_llm.script = numbered(lambda r, n: Reply(status=503) if n > 2 else healthy(r))
    before = len(reset_reef_upstream.chat_requests())
    task = write_task(tmp_path / "task")
    state_dir = tmp_path / "state"
    library = new_library(state_dir, task, groups=2)
    scenario = _scenario()
    settings = dict(
        task=task,
        reef_server=reef_server,
        scenario=scenario,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        groups=2,
        rollouts=2,
    )
    with pytest.raises(StepFailed, match="HTTP 503"):
        run_step(step_context(library=library, **settings), 0)
    reported_before = len(reef_server.records(scenario, "report"))
    assert reported_before == 2
    library.close()

    # The process is gone; a new one restores the committed archive and finishes the step.
    from atoll.guidance_ttt.state.durable_archive import Library

    scripted_llm.script = healthy
    library = Library.restore_committed(state_dir)
    summary = run_step(step_context(library=library, **settings), 0)
    assert summary.resumed_rollouts == 2
    assert summary.sampled == 4 and summary.valid == 4
    # Each slot was sampled exactly once across both processes, and reported exactly once.
    assert len(reset_reef_upstream.chat_requests()) - before == 4
    assert len(reef_server.records(scenario, "inference")) == 4
    assert len(reef_server.records(scenario, "report")) == 4
    library.close()


@pytest.mark.slow
def test_lost_acknowledgements_are_reposted_with_the_same_ids(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = ExecutorScript()
    task = write_task(tmp_path / "task")
    state_dir = tmp_path / "state"
    library = new_library(state_dir, task, groups=1)
    scenario = _scenario()
    settings = dict(
        task=task,
        reef_server=reef_server,
        scenario=scenario,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        groups=1,
        rollouts=2,
    )
    run_step(step_context(library=library, **settings), 0)
    library.close()
    journal = next((state_dir / "guidance-run" / "steps").glob("step-*.jsonl"))
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(line for line in lines if '"acknowledged"' not in line))

    from atoll.guidance_ttt.state.durable_archive import Library

    library = Library.restore_committed(state_dir)
    executor_calls = len(scripted_llm.chat_requests())
    summary = run_step(step_context(library=library, **settings), 0)
    assert summary.reposted_reports == 2 and summary.resumed_rollouts == 2
    assert len(scripted_llm.chat_requests()) == executor_calls
    assert len(reef_server.records(scenario, "report")) == 2
    library.close()


@pytest.mark.slow
def test_a_failed_or_lost_guidance_call_is_a_failed_rollout_never_a_new_sample(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    guidance = GuidanceScript()

    def one_lost_one_refused(request, number):
        if number == 1:  # its answer comes after the client gave up: lost in transit
            return Reply(content="<guidance>late</guidance>", delay_s=8.0)
        if number == 2:  # the model's server fails; Reef answers with an error
            return Reply(status=503, error_message="overloaded")
        return guidance(request)

    reset_reef_upstream.script = upstream = numbered(one_lost_one_refused)
    scripted_llm.script = ExecutorScript()
    task = write_task(tmp_path / "task")
    state_dir = tmp_path / "state"
    library = new_library(state_dir, task, groups=1)
    scenario = _scenario()
    settings = dict(
        task=task,
        reef_server=reef_server,
        scenario=scenario,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        groups=1,
        rollouts=3,
        guidance_timeout_s=3.0,  # the late answer's wait, with room for a loaded machine
    )
    context = step_context(library=library, **settings)
    context.limits = Limits(guidance=1, executor=1, judge=1)  # one call at a time
    summary = run_step(context, 0)
    # One generation attempt per slot: three slots, three calls, none sent again.
    assert upstream.calls == 3
    assert summary.sampled == 3 and summary.failed_guidance_calls == 2
    assert summary.valid == 1 and summary.well_formed_guidance == 1
    assert library.archive.total_rollouts == 3  # each failed slot is a PUCT visit
    journal = read_step(step_journal_path(run_dir(state_dir), 0), 0)
    failed = {
        slot: d.rollout.verification for slot, d in journal.finished.items() if d.receipt is None
    }
    assert {(v.status, v.reward) for v in failed.values()} == {(Status.GUIDANCE_FAILED, 0.0)}
    (lost,) = [slot for slot, v in failed.items() if "no answer from Reef" in v.message]
    (refused,) = [slot for slot, v in failed.items() if "HTTP 502" in v.message]
    assert "503" in failed[refused].message  # Reef passes the model server's failure on
    # Without a receipt there is nothing to report against; the lost call is an orphan.
    assert sorted(summary.unreported) == sorted([list(lost), list(refused)])
    assert len(reef_server.records(scenario, "report")) == 1
    assert [(o["group"], o["rollout"], o["attempt"]) for o in summary.orphans] == [(*lost, 1)]
    library.close()

    # A resume books the journaled failures again and samples nothing.
    from atoll.guidance_ttt.state.durable_archive import Library

    library = Library.restore_committed(state_dir)
    again = run_step(step_context(library=library, **settings), 0)
    assert upstream.calls == 3 and again.failed_guidance_calls == 2 and again.resumed_rollouts == 3
    library.close()


@pytest.mark.slow
def test_a_training_step_with_a_slot_reef_cannot_fill_stops_at_once(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = lambda request: Reply(status=503, error_message="down")
    scripted_llm.script = ExecutorScript()
    task = write_task(tmp_path / "task")
    state_dir = tmp_path / "state"
    library = new_library(state_dir, task, groups=1)
    settings = dict(
        task=task,
        reef_server=reef_server,
        scenario=_scenario(),
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        groups=1,
        rollouts=2,
    )
    context = step_context(library=library, **settings)
    context.complete_grid = True
    context.guidance_resend_delay_s = 0.0  # Reef recorded nothing: one re-send, which fails too
    context.limits = Limits(guidance=1, executor=1, judge=1)
    before = len(reset_reef_upstream.chat_requests())
    with pytest.raises(
        GridIncomplete, match="step 0 can never train: the guidance call of group 0"
    ):
        run_step(context, 0)
    assert scripted_llm.chat_requests() == []
    library.close()
    from atoll.guidance_ttt.state.durable_archive import Library

    library = Library.restore_committed(state_dir)
    resumed = step_context(library=library, **settings)
    resumed.complete_grid = True
    sent = len(reset_reef_upstream.chat_requests())
    with pytest.raises(GridIncomplete):
        run_step(resumed, 0)
    assert len(reset_reef_upstream.chat_requests()) == sent  # nothing sampled on resume
    assert sent - before >= 1
    library.close()


@pytest.mark.slow
def test_a_judge_that_is_down_stops_the_step_and_scores_nothing(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm
):
    from support.ports import free_port

    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = ExecutorScript()
    task = write_task(tmp_path / "task")
    library = new_library(tmp_path / "state", task, groups=1)
    scenario = _scenario()
    context = step_context(
        task=task,
        library=library,
        reef_server=reef_server,
        scenario=scenario,
        executor_url=scripted_llm.base_url,
        judge_url=f"http://127.0.0.1:{free_port()}",
        groups=1,
        rollouts=2,
    )
    with pytest.raises(StepFailed, match="judge failure"):
        run_step(context, 0)
    assert reef_server.records(scenario, "report") == []
    assert library.archive.total_rollouts == 0
    library.close()
