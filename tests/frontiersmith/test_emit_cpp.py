"""`atoll emit frontiersmith --language cpp`: C++ programs, the same Python checker.

One run of two seeds with the scripted model on loopback and real Harbor
trials on atoll-local (the host's g++), shared by all the xdist workers of
the test run (support/shared_build.py) and only read by the tests: one
seed's C++ baseline and samples make a task, exported with
`solution/solution.cpp`, the judge's compile flags in its grading contract
and `solution_language: "cpp"` in its search contract; Harbor's oracle on
the exported task scores what the run recorded and its no-op scores 0. The
other seed's baseline does not compile: that is the candidate's failure
(every case a crash with the compiler's message), never an infrastructure
error.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ci
from support.frontiersmith_cli import emit, oracle_and_nop
from support.frontiersmith_model import (
    CPP_BASELINE_DOES_NOT_COMPILE,
    CPP_KNAPSACK,
    KnapsackModel,
    seed_lines,
)
from support.openai_server import ScriptedOpenAIServer
from support.shared_build import copied, run_root, shared_build

from atoll.core.ledger import Ledger
from atoll.frontiersmith.bundle import read_bundle
from atoll.judge.compiler import FLAGS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
]


@pytest.fixture(autouse=True)
def _gxx() -> None:
    ci.gxx_fixture()


def _campaign(venv_bin: Path, home: Path) -> dict[str, Any]:
    """The campaign, built once for all the workers of the run; the record holds what the
    tests read besides the files."""
    seeds = home / "seeds.jsonl"
    seeds.write_text(seed_lines(["c1", "c2"]))
    model = KnapsackModel({"c2": CPP_BASELINE_DOES_NOT_COMPILE}, kit=CPP_KNAPSACK)
    with ScriptedOpenAIServer(model.script) as server:
        done = emit(
            venv_bin, home,
            "--seeds", str(seeds), "--target", "2", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "atoll-local", "--workers", "2", "--language", "cpp",
            "--out", str(home / "out"),
        )  # fmt: skip
        bodies = [r.body for r in server.chat_requests()]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return {"request_bodies": bodies}


@pytest.fixture(scope="module")
def campaign(venv_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Shared by every worker (support/shared_build.py): the tests only read it."""
    built = shared_build(
        run_root(tmp_path_factory), "emit-cpp", lambda home: _campaign(venv_bin, home)
    )
    out = built.files / "out"
    summary = json.loads((out / "run.json").read_text())
    yield {**built.record, "out": out, "summary": summary}
    built.assert_unchanged()


def test_a_cpp_campaign_emits_a_cpp_task(campaign: Any, tmp_path: Path) -> None:
    accepted = campaign["summary"]["accepted"]
    assert [a["seed_id"] for a in accepted] == ["c1"]
    task = campaign["out"] / accepted[0]["task"]["path"]
    bundle = read_bundle(task)
    assert bundle.spec.language == "cpp"
    assert (task / "solution" / "solution.cpp").read_text() == bundle.spec.solution
    assert (task / "solution" / "baseline.cpp").is_file()
    assert not (task / "solution" / "solution.py").exists()
    grading = json.loads((task / "tests" / "contract.json").read_text())
    assert (grading["language"], grading["compile"]["flags"]) == ("cpp", list(FLAGS))
    search = json.loads((task / "contract.json").read_text())
    assert (search["scorer"], search["solution_language"]) == ("checker", "cpp")
    assert "/workspace/solution.cpp" in (task / "tests" / "test.sh").read_text()
    assert "solution.cpp" in (task / "instruction.md").read_text()
    # Every trial's worker receipt records that the host's g++ compiled the programs.
    (ledger_path,) = campaign["out"].glob("runs/*/ledger.sqlite")
    with Ledger.open(copied(ledger_path, tmp_path)) as ledger:
        work = ledger.work()
    assert work and all(
        w.detail["environment_choice"]["compiler"] == shutil.which("g++") for w in work
    )
    # The programs were asked for in C++.
    bodies = [json.dumps(body) for body in campaign["request_bodies"]]
    solve = [b for b in bodies if "independent solution" in b]
    assert solve and all("C++17" in b for b in solve)


def test_a_baseline_that_does_not_compile_is_the_candidates_failure(campaign: Any) -> None:
    skipped = {s["seed_id"]: s for s in campaign["summary"]["skipped"]}
    assert skipped["c2"]["status"] == "rejected"
    assert (skipped["c2"]["stage"], skipped["c2"]["reason"]) == (
        "execution",
        "insufficient_successful_programs",
    )
    outcome = json.loads((campaign["out"] / "runs").glob("*/seeds/c2.json").__next__().read_text())
    baseline = outcome["evidence"]["execution"]["trials"]["baseline"]
    assert baseline["reward"] == 0.0 and baseline["error"] is None
    assert set(baseline["statuses"]) == {"crash"}
    found = campaign["out"].glob("runs/*/**/verifier/scores.json")
    scores = [p for p in found if "c2" in p.parts and "baseline" in str(p)]
    details = {c["detail"] for p in scores for c in json.loads(p.read_text())["cases"]}
    assert details and all("compilation failed" in d and "undeclared_total" in d for d in details)


def test_the_exported_cpp_task_passes_its_oracle_and_its_noop_scores_zero(
    campaign: Any, venv_bin: Path, tmp_path: Path
) -> None:
    """Its jobs and state go to a home of its own: the campaign's is shared and only read."""
    accepted = campaign["summary"]["accepted"]
    recorded = {a["task"]["name"]: a["task"]["reference_reward"] for a in accepted}
    rewards = oracle_and_nop(venv_bin, tmp_path, sorted((campaign["out"] / "tasks").iterdir()))
    assert rewards == {
        **{(name, "oracle"): reward for name, reward in recorded.items()},
        **{(name, "nop"): 0.0 for name in recorded},
    }
    assert all(reward > 0 for reward in recorded.values())


def test_a_search_of_the_cpp_task_starts_from_its_cpp_baseline_graded_by_the_checker(
    campaign: Any,
) -> None:
    from atoll.core.scoring import ScorerSetup, ScoreStatus, open_scorer
    from atoll.guidance_ttt.contract import load_task
    from atoll.guidance_ttt.search.seed import seed_path

    accepted = campaign["summary"]["accepted"][0]["task"]
    task_dir = campaign["out"] / accepted["path"]
    task = load_task(task_dir)
    assert task.contract.solution_language == "cpp"
    seed = seed_path(task_dir, task.contract)
    assert seed == task_dir / "solution" / "baseline.cpp"
    setup = ScorerSetup(language="cpp", task_dir=task_dir)
    with open_scorer(task.contract.scorer, setup) as scorer:
        score = scorer.score(seed.read_text())
    assert score.status is ScoreStatus.VALID
    assert score.reward == accepted["baseline_reward"]
