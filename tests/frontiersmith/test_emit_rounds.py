"""`--rounds 2 --population 1`: round 2's seeds are round 1's tasks, and the population competes.

One scripted campaign, shared by the module's tests (support/shared_build.py),
on atoll-local with real Harbor trials. Round 1 has three seeds: s1 and s2
become tasks, the filter rejects s3. Round 2's seeds are the public
statements of s1 and s2; the scripted model hardens them (nine items a
parcel list instead of six, a larger cap), and s2's hardened candidate has
samples that all score alike, so only s1-r2 is accepted. With a population
of one per family, s1 and s1-r2 compete: the one whose samples are more
diverse in execution stays in `tasks/`, the other moves to `dropped/`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.frontiersmith_cli import emit, emit_env
from support.frontiersmith_model import (
    FILTER_REJECTS,
    HARD_KNAPSACK,
    SAME_SAMPLES,
    KnapsackModel,
    seed_lines,
    seed_of,
)
from support.openai_server import ScriptedOpenAIServer, stage_of
from support.shared_build import copied, run_root, shared_build

from atoll.core.durable import canonical_json
from atoll.core.ledger import Ledger, State, request_key
from atoll.frontiersmith.bundle import read_bundle
from atoll.frontiersmith.population import ranked

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BEHAVIOURS = {"s3": FILTER_REJECTS, "s2-r2": SAME_SAMPLES}
LINEAGE_KEYS = ("parent_task", "parent_seed", "root_seed")


def _collect(venv_bin: Path, home: Path) -> dict[str, Any]:
    seeds = home / "seeds.jsonl"
    seeds.write_text(seed_lines(["s1", "s2", "s3"]))
    model = KnapsackModel(BEHAVIOURS, derived_kit=HARD_KNAPSACK)
    with ScriptedOpenAIServer(model.script) as server:
        done = emit(
            venv_bin, home,
            "--seeds", str(seeds), "--target", "3", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "atoll-local", "--out", str(home / "out"), "--workers", "2",
            "--rounds", "2", "--population", "1",
        )  # fmt: skip
        bodies = [r.body for r in server.chat_requests()]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return {"output": done.stdout + done.stderr, "request_bodies": bodies}


@pytest.fixture(scope="module")
def campaign(venv_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    built = shared_build(
        run_root(tmp_path_factory), "emit-rounds", lambda home: _collect(venv_bin, home)
    )
    out = built.files / "out"
    summary = json.loads((out / "run.json").read_text())
    accepted = {a["seed_id"]: a for a in summary["accepted"]}
    yield {**built.record, "out": out, "summary": summary, "accepted": accepted}
    built.assert_unchanged()


def _learner_visible(task: Path) -> list[Path]:
    """What a learner's trial sees of a bundle: the instruction and the image's files."""
    return [task / "instruction.md", *(p for p in (task / "environment").rglob("*") if p.is_file())]


def test_round_two_tasks_come_from_round_one_tasks_with_their_lineage(campaign: Any) -> None:
    out, accepted = campaign["out"], campaign["accepted"]
    assert sorted(accepted) == ["s1", "s1-r2", "s2"]
    child = accepted["s1-r2"]
    expected = {"round": 2, "parent_task": "s1", "parent_seed": "s1", "root_seed": "s1"}
    assert child["lineage"] == expected
    assert accepted["s1"]["lineage"] == {
        "round": 1, "parent_task": None, "parent_seed": None, "root_seed": "s1",
    }  # fmt: skip
    assert child["task"]["mutation"] == "harden"
    (run_dir,) = (out / "runs").iterdir()
    journaled = json.loads((run_dir / "seeds" / "s1-r2.json").read_text())
    assert journaled["lineage"] == expected  # the seed's own diagnostics, outside any bundle
    report = (out / "report.md").read_text()
    assert "## Lineage" in report
    assert f"| [s1-r2]({child['task']['path']}) | 2 | s1 | s1 |" in report
    for entry in accepted.values():
        task = out / entry["task"]["path"]
        bundle = read_bundle(task)
        assert bundle.bundle_hash == entry["task"]["bundle_hash"]
        lineage = tomllib.loads((task / "task.toml").read_text())["metadata"]["seed_lineage"]
        assert lineage["seed_id"] == entry["seed_id"]
        if entry["lineage"]["round"] == 2:
            assert {k: lineage[k] for k in ("round", *LINEAGE_KEYS)} == entry["lineage"]
        else:  # a round-1 bundle is the one a single-round run writes
            assert not set(LINEAGE_KEYS) & set(lineage) and "round" not in lineage
        for path in _learner_visible(task):
            text = path.read_text()
            assert not any(key in text for key in LINEAGE_KEYS), path


def test_no_test_or_scorer_content_reaches_a_round_two_prompt(campaign: Any) -> None:
    """A round-2 seed is its parent's public statement: the mutate request that carries it
    holds the statement and nothing of the parent's checker, programs or hidden cases."""
    out, bodies = campaign["out"], campaign["request_bodies"]
    for parent in ("s1", "s2"):
        task = out / campaign["accepted"][parent]["task"]["path"]
        spec = read_bundle(task).spec
        mutates = [
            "\n".join(m["content"] for m in b["messages"])
            for b in bodies
            if stage_of(b) == "mutate" and seed_of(b) == f"{parent}-r2"
        ]
        assert mutates, parent
        private = [
            line.strip()
            for path in [*(task / "tests").glob("*.py"), *(task / "solution").glob("*.py")]
            for line in path.read_text().splitlines()
            if len(line.strip()) >= 12
        ]
        namespace: dict[str, Any] = {}
        exec(spec.generator, namespace)
        hidden = namespace["generate"](spec.contract.seed)
        for text in mutates:
            assert spec.statement.strip() in text and "Harden it:" in text
            assert f"task {parent}, an open-ended optimization task accepted in round 1" in text
            for line in private:
                assert line not in text, (parent, line)
            for instance in hidden:
                for form in (
                    json.dumps(instance["items"]),
                    json.dumps(instance["items"], separators=(",", ":")),
                ):
                    assert form not in text


def test_the_report_shows_yield_and_diversity_per_round(campaign: Any) -> None:
    summary, accepted = campaign["summary"], campaign["accepted"]
    first, second = summary["rounds"]
    assert (first["round"], first["seeds"], first["candidates"], first["accepted"]) == (1, 3, 3, 2)
    assert (second["round"], second["seeds"], second["candidates"], second["accepted"]) == (
        2,
        2,
        2,
        1,
    )
    assert first["yield"] == pytest.approx(2 / 3) and second["yield"] == 0.5
    for row, seeds in ((first, ("s1", "s2")), (second, ("s1-r2",))):
        measured = [ranked(accepted[s]) for s in seeds]
        assert row["mean_distinct_fraction"] == pytest.approx(
            sum(m.distinct_fraction for m in measured) / len(measured)
        )
        assert row["mean_pair_distance"] == pytest.approx(
            sum(m.mean_distance for m in measured) / len(measured)
        )
    skipped = {s["seed_id"]: (s["reason"], s["lineage"]["round"]) for s in summary["skipped"]}
    assert skipped == {
        "s3": ("formulation_rejected", 1),
        "s2-r2": ("low_execution_diversity_or_improvement", 2),
    }
    report = (campaign["out"] / "report.md").read_text()
    assert "## Rounds" in report
    assert f"| 1 | 3 | 3 | 2 | 66.7% | {first['mean_distinct_fraction']:.4f} |" in report
    assert f"| 2 | 2 | 2 | 1 | 50.0% | {second['mean_distinct_fraction']:.4f} |" in report
    assert "round 2" in campaign["output"] and "50.0%" in campaign["output"]


def test_the_population_keeps_the_most_diverse_task_of_each_family(campaign: Any) -> None:
    out, summary, accepted = campaign["out"], campaign["summary"], campaign["accepted"]
    family = sorted((accepted[s] for s in ("s1", "s1-r2")), key=lambda a: ranked(a).key())
    best, other = family
    assert best["seed_id"] == "s1-r2"  # nine items spread its samples further apart
    assert (best["population"], other["population"]) == ("kept", "dropped")
    assert accepted["s2"]["population"] == "kept"  # alone in its family
    assert other["dropped_after_round"] == 2 and other["task"]["path"] == "dropped/s1"
    assert sorted(p.name for p in (out / "tasks").iterdir()) == ["s1-r2", "s2"]
    assert sorted(p.name for p in (out / "dropped").iterdir()) == ["s1"]
    assert read_bundle(out / "dropped" / "s1").bundle_hash == other["task"]["bundle_hash"]
    (run_dir,) = (out / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    closes = [(e["round"], e["dropped"], e["next_seeds"]) for e in events if e["event"] == "round"]
    assert closes == [(1, [], ["s1-r2", "s2-r2"]), (2, ["s1"], [])]
    (dropped,) = summary["population"]["dropped"]
    assert (dropped["task"], dropped["family"], summary["population"]["size"]) == ("s1", "s1", 1)
    assert (
        "| [s1](dropped/s1) | 1 | - | s1 | dropped after round 2 |"
        in (out / "report.md").read_text()
    )


def test_one_ledger_and_nothing_paid_twice_across_rounds(campaign: Any, tmp_path: Path) -> None:
    bodies = [canonical_json(body) for body in campaign["request_bodies"]]
    assert len(bodies) == len(set(bodies))
    (run_dir,) = (campaign["out"] / "runs").iterdir()
    with Ledger.open(copied(run_dir / "ledger.sqlite", tmp_path)) as ledger:
        receipts = ledger.receipts()
        totals = ledger.totals()
    assert len(receipts) == len(bodies) and {r.state for r in receipts} == {State.ANSWERED}
    assert {r.label.split(":", 1)[1] for r in receipts} == {"s1", "s2", "s3", "s1-r2", "s2-r2"}
    assert totals.limit_micro == 5_000_000
    assert campaign["summary"]["totals"]["token_cost_usd"] == totals.spent_micro / 1e6


def test_a_campaign_killed_in_round_two_resumes_without_redoing_round_one(
    venv_bin: Path, tmp_path: Path
) -> None:
    """SIGKILL while a round-2 `solve` answer is held: reconcile, resume; round 1 is neither
    asked nor tried again, and every answered request of round 2 is replayed, not re-sent."""
    seeds, out = tmp_path / "seeds.jsonl", tmp_path / "out"
    seeds.write_text(seed_lines(["k1"]))
    model = KnapsackModel(derived_kit=HARD_KNAPSACK)
    model.hold = ("solve", "k1-r2")
    with ScriptedOpenAIServer(model.script) as server:
        flags = [
            "--seeds", str(seeds), "--target", "1", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "atoll-local", "--out", str(out), "--rounds", "2",
        ]  # fmt: skip
        process = subprocess.Popen(
            [str(venv_bin / "atoll"), "emit", "frontiersmith", *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=emit_env(tmp_path),
            cwd=tmp_path,
        )
        try:
            assert model.held.wait(timeout=300), "the run never reached round 2's held request"
            time.sleep(1.0)  # the other answers of the stage settle meanwhile
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        model.hold = None
        model.release.set()
        (run_dir,) = (out / "runs").iterdir()
        before = _round_one_state(run_dir, out)
        sent_before = len(server.chat_requests())

        settled = emit(venv_bin, tmp_path, "reconcile", run_dir.name, "--out", str(out))
        assert settled.returncode == 0, settled.stderr
        resumed = emit(venv_bin, tmp_path, "--out", str(out), "--resume", run_dir.name)
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-4000:]
        requests = server.chat_requests()

    after_kill = {request_key(r.body) for r in requests[sent_before:]}
    assert after_kill and not after_kill & before["requests"]  # round 1 was not asked again
    assert _round_one_state(run_dir, out) == before  # nor tried, journaled or closed again
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        receipts = ledger.receipts()
        totals = ledger.totals()
    lost = [r for r in receipts if r.state is State.RECONCILED]  # the held answers
    assert lost and {r.label for r in lost} == {"solve:k1-r2"}
    reconciled = Counter(r.key for r in lost)
    sent = Counter(request_key(r.body) for r in requests)
    for key, count in sent.items():
        assert count == 1 + reconciled.get(key, 0), "a request was sent again unreconciled"
    assert totals.limit_micro == 5_000_000  # one budget for both rounds
    assert {r.label.split(":", 1)[1] for r in receipts} == {"k1", "k1-r2"}
    summary = json.loads((out / "run.json").read_text())
    assert [(a["seed_id"], a["lineage"]["round"]) for a in summary["accepted"]] == [
        ("k1", 1),
        ("k1-r2", 2),
    ]
    assert [r["accepted"] for r in summary["rounds"]] == [1, 1]


def _round_one_state(run_dir: Path, out: Path) -> dict[str, Any]:
    """What round 1 left: its requests and its trials' receipts, its journal entry, its record
    and its bundle."""
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        trials = sorted(w.name for w in ledger.work() if w.label.startswith("trial:k1:"))
        asked = {r.key for r in ledger.receipts() if r.label.endswith(":k1")}
    return {
        "requests": asked,
        "outcome": (run_dir / "seeds" / "k1.json").read_bytes(),
        "record": (run_dir / "rounds" / "round-1.json").read_bytes(),
        "bundle": read_bundle(out / "tasks" / "k1").bundle_hash,
        "trials": trials,
    }
