"""A task's own code failing on a program's real output is repair evidence, never an error.

The scripted scorer passes every check before grading (construction's fuzz
included) but raises on a selection of four items or more, which only some
samples print, so the failure shows only in the execution trials: there the
grader scores the case 0 (`judge_error`) and names why. One seed's scorer is right once
repaired with that evidence; the other's never is, and its candidate is
rejected when the repairs run out. A resume then tries neither again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.frontiersmith_cli import emit
from support.frontiersmith_model import (
    SCORER,
    SCORER_RAISES_ALWAYS,
    SCORER_RAISES_ON_FOUR,
    SCORER_RAISES_ONCE,
    KnapsackModel,
    is_repair,
    seed_lines,
    seed_of,
)
from support.openai_server import ScriptedOpenAIServer, stage_of

from atoll.core.ledger import Ledger

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# s1: only sample-1 (greedy by ratio) takes four items on an instance of its grading seed;
# s2: every sample does.
BEHAVIOURS = {"s1": SCORER_RAISES_ONCE, "s2": SCORER_RAISES_ALWAYS}


@pytest.fixture(scope="module")
def campaign(venv_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    assert SCORER_RAISES_ON_FOUR != SCORER  # the scripted defect is really in the scorer
    home = tmp_path_factory.mktemp("evidence")
    seeds = home / "seeds.jsonl"
    seeds.write_text(seed_lines(["s1", "s2"]))
    out = home / "out"
    with ScriptedOpenAIServer(KnapsackModel(BEHAVIOURS).script) as server:
        flags = [
            "--seeds", str(seeds), "--target", "2", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "atoll-local", "--max-repairs", "1", "--workers", "2",
            "--out", str(out),
        ]  # fmt: skip
        done = emit(venv_bin, home, *flags)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
        first = json.loads((out / "run.json").read_text())
        (run_dir,) = (out / "runs").iterdir()
        with Ledger.open(run_dir / "ledger.sqlite") as ledger:
            trials_before = len(ledger.work())
        sent_before = len(server.chat_requests())
        resumed = emit(venv_bin, home, "--out", str(out), "--resume", run_dir.name)
        with Ledger.open(run_dir / "ledger.sqlite") as ledger:
            trials_after = len(ledger.work())
        requests = server.chat_requests()
    return {
        "first": first,
        "resumed": resumed,
        "second": json.loads((out / "run.json").read_text()),
        "requests": requests,
        "sent_before": sent_before,
        "trials": (trials_before, trials_after),
    }


def _scorer_requests(campaign: Any, seed: str) -> list[dict]:
    return [
        r.body
        for r in campaign["requests"]
        if stage_of(r.body) == "scorer" and seed_of(r.body) == seed
    ]


def _the_scorer_is_repaired_with_the_execution_evidence(campaign: Any) -> None:
    accepted = {a["seed_id"]: a for a in campaign["first"]["accepted"]}
    assert set(accepted) == {"s1"}
    construction = accepted["s1"]["evidence"]["construction"]
    assert construction["repairs"] == 1
    (failures,) = construction["execution_failures"]
    assert [(f["trial"], f["check"]) for f in failures] == [("sample-1", "scorer runs")]
    assert isinstance(failures[0]["case"], int)
    first, repair = _scorer_requests(campaign, "s1")
    assert not is_repair(first) and is_repair(repair)
    assert json.loads(repair["messages"][-2]["content"]) == {"code": SCORER_RAISES_ON_FOUR}
    evidence = repair["messages"][-1]["content"]
    assert "scorer runs: " in evidence and "ValueError: cannot score a selection" in evidence
    assert "on the real output of the sample-1 program" in evidence
    assert f"the failing instance (case {failures[0]['case']}): {{" in evidence
    assert '"capacity"' in evidence  # the instance itself
    assert 'the output: {"take": [' in evidence  # the sample's own output, as graded
    assert "the verifier's output (end):" in evidence
    assert f"grader: case {failures[0]['case']} scores 0: scorer runs" in evidence
    assert "every program's per-case scores in execution:" in evidence
    assert "- baseline: reward " in evidence  # every program's grading finished
    assert "judge_error" in evidence  # the failing sample's statuses among them
    # only the implicated file was asked again
    others = [
        r.body
        for r in campaign["requests"]
        if stage_of(r.body) in ("generator", "feasibility") and seed_of(r.body) == "s1"
    ]
    assert len(others) == 2 and not any(is_repair(b) for b in others)


def _a_scorer_never_repaired_is_a_rejection_with_its_reason(campaign: Any) -> None:
    skipped = {s["seed_id"]: s for s in campaign["first"]["skipped"]}
    assert (skipped["s2"]["status"], skipped["s2"]["reason"], skipped["s2"]["stage"]) == (
        "rejected",
        "infrastructure_repair_exhausted",
        "execution",
    )
    assert "scorer runs" in skipped["s2"]["detail"]
    assert len(_scorer_requests(campaign, "s2")) == 2  # the first answer and its one repair
    assert campaign["first"]["totals"]["errors"] == 0


def _a_resume_tries_neither_again(campaign: Any) -> None:
    assert campaign["resumed"].returncode == 0, campaign["resumed"].stderr[-3000:]
    assert len(campaign["requests"]) == campaign["sent_before"]  # nothing asked again
    before, after = campaign["trials"]
    assert after == before  # no trial run again
    skipped = {s["seed_id"]: s["reason"] for s in campaign["second"]["skipped"]}
    assert skipped == {"s2": "infrastructure_repair_exhausted"}


def test_execution_failures_are_repaired_or_rejected_and_never_tried_again(
    campaign: Any, subtests: pytest.Subtests
) -> None:
    """One campaign, three findings, each a subtest that reports apart from the others.

    As three tests they went to three xdist workers, and each built the campaign again
    (about 55 s each on 2 cores).
    """
    for finding in (
        _the_scorer_is_repaired_with_the_execution_evidence,
        _a_scorer_never_repaired_is_a_rejection_with_its_reason,
        _a_resume_tries_neither_again,
    ):
        with subtests.test(finding.__name__.strip("_").replace("_", " ")):
            finding(campaign)
