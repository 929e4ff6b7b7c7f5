"""An uncertain request skips its candidate and the run goes on; reconcile says what it costs.

The provider drops the connection after one seed's `filter` request was
sent: that answer is lost, its receipt uncertain with its reservation. The
other seed is still accepted; the run exits 3 and names the reconcile.
A resume (by run id alone, found through the run index) refuses until
`reconcile` settles the receipt; reconcile then says how many requests the
resume will send again and what it reserves, and the report counts the
reconciled amount in the token cost. The seed file is moved away before
the resume: a resume reads the seeds stored in the run directory. No engine
answers, so the run chooses atoll-local itself and records why in
run-config.json, the report and every worker receipt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.frontiersmith_cli import emit
from support.frontiersmith_model import KnapsackModel, seed_lines, seed_of
from support.openai_server import Reply, ScriptedOpenAIServer

from atoll.core.ledger import Ledger, State

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_an_uncertain_request_skips_its_seed_and_reconcile_says_what_it_costs(
    venv_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no engine answers: the run chooses atoll-local itself, and says so everywhere
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["u1", "u2"]))
    out = tmp_path / "out"
    model = KnapsackModel()
    answer_filter = model.script.answers["filter"]
    dropped: list[int] = []

    def filter_once_lost(request):
        if seed_of(request) == "u1" and not dropped:
            dropped.append(1)
            return Reply(drop=True)
        return answer_filter(request)

    model.script.answers["filter"] = filter_once_lost
    with ScriptedOpenAIServer(model.script) as server:
        first = emit(
            venv_bin, tmp_path,
            "--seeds", str(seeds), "--target", "2", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--worker-price", "3.6", "--out", str(out),
        )  # fmt: skip
        assert first.returncode == 3, first.stdout[-2000:] + first.stderr[-4000:]
        summary = json.loads((out / "run.json").read_text())
        assert [a["seed_id"] for a in summary["accepted"]] == ["u2"]  # the run went on
        (skipped,) = summary["skipped"]
        assert (skipped["seed_id"], skipped["status"], skipped["reason"]) == (
            "u1",
            "error",
            "request_uncertain",
        )
        assert summary["totals"]["candidates"] == 2 and summary["totals"]["yield"] == 0.5
        (run_id,) = [p.name for p in (out / "runs").iterdir()]
        assert f"reconcile {run_id}" in first.stderr
        totals = summary["totals"]
        # $3.6 an hour is $0.001 a second; the report rounds the seconds to the millisecond
        # and prices the exact ones, so the two agree within half a millisecond's price.
        assert totals["worker_cost_usd"] == pytest.approx(
            totals["worker_seconds"] / 1000, abs=0.0005 / 1000
        )
        assert totals["worker_cost_usd"] > 0
        # the campaign's record: the seeds' full text and the code it ran
        stored_seeds = (out / "runs" / run_id / "seeds.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in stored_seeds] == [
            json.loads(line) for line in seeds.read_text().splitlines()
        ]
        stored = json.loads((out / "runs" / run_id / "run-config.json").read_text())
        code = stored["code"]
        assert "atoll.core" in code["packages"] and code["harbor"] and code["python"]
        choice = stored["config"]["environment_choice"]
        assert stored["config"]["environment"] == "atoll-local"
        assert "no Docker engine answers" in choice and "host's python3" in choice
        assert choice in " ".join((out / "report.md").read_text().split())
        with Ledger.open(out / "runs" / run_id / "ledger.sqlite") as ledger:
            (lost,) = ledger.uncertain()
            work = ledger.work()
        assert work and all(
            w.detail["environment_choice"]["environment"] == "atoll-local"
            and w.detail["environment_choice"]["reason"] == choice
            and w.detail["environment_choice"]["interpreter"].endswith("python3")
            for w in work
        )
        assert lost.label == "filter:u1"

        sent = len(server.chat_requests())
        blocked = emit(venv_bin, tmp_path, "--resume", run_id)  # no --out: the run index
        assert blocked.returncode == 2 and "uncertain request" in blocked.stderr
        assert len(server.chat_requests()) == sent  # never re-sent before reconcile

        settled = emit(venv_bin, tmp_path, "reconcile", run_id)
        assert settled.returncode == 0, settled.stderr
        said = " ".join((settled.stdout + settled.stderr).split())
        reserved = f"${lost.reserved_micro / 1e6:.6f}"
        assert f"1 request(s) settled at {reserved}, counted in the run's token cost" in said
        assert (
            f"the resume will send 1 of them again (their answers were lost), reserving {reserved}"
            in said
        )
        hint = re.search(r"resume with (atoll emit frontiersmith --resume \S+ --out \S+)", said)
        assert hint is not None

        seeds.rename(tmp_path / "moved-away.jsonl")  # the resume reads the run's stored seeds
        resumed = emit(venv_bin, tmp_path, *hint.group(1).split()[3:])  # the hint, as printed
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-4000:]
        filters_u1 = [
            r
            for r in server.chat_requests()
            if seed_of(r.body) == "u1" and "filter" in json.dumps(r.body["response_format"])
        ]
    assert len(filters_u1) == 2  # sent once more after the reconcile, as reconcile said
    summary = json.loads((out / "run.json").read_text())
    assert sorted(a["seed_id"] for a in summary["accepted"]) == ["u1", "u2"]
    totals = summary["totals"]
    assert totals["reconciled_requests"] == 1
    assert totals["reconciled_usd"] == lost.reserved_micro / 1e6
    with Ledger.open(out / "runs" / run_id / "ledger.sqlite") as ledger:
        receipts = ledger.receipts()
    assert totals["token_cost_usd"] == sum(r.cost_micro or 0 for r in receipts) / 1e6
    assert {r.state for r in receipts} == {State.ANSWERED, State.RECONCILED}
    report = (out / "report.md").read_text()
    assert "of which reconciled requests" in report
