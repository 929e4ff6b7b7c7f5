"""A two-step search-only Guidance-TTT run on each discovery task, with scripted models.

The run starts as the Harbor agent starts it (`run_search` on the task
directory): the guidance model answers through the real Reef server, the
executor is a scripted OpenAI-compatible server, and every program, the seed
included, is scored by the task's own verifier in the verifier's box (the
`verifier` scorer its contract names). The executor first answers with a
construction better than the seed, then with an invalid one, then with the
seed again (a duplicate). The best node must be the better construction, with
the score its verifier gives it, and the invalid one must cost a visit and
score 0 without becoming a node.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.guidance_run import GuidanceScript
from support.openai_server import NumberedScript, Reply

from atoll.checker.verifier_scorer import VerifierScorer
from atoll.discovery import TASKS, evaluate, task_dir, task_facts
from atoll.guidance_ttt.agent import agent_config
from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.services.wiring import run_search
from atoll.guidance_ttt.state.durable_archive import Library
from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DATA = Path(__file__).parent / "data"
AC1_HEIGHTS = [0.63, 0.19, 0.06, 0.58, 0.21, 0.23, 0.63, 0.35, 0.36, 1.0, 0.87, 0.74]
AC2_HEIGHTS = [0.61, 0.11, 0.34, 0.39, 0.38, 0.3, 0.61, 0.35, 0.68, 0.98, 1.0, 0.55]


def _printing(value: Any) -> str:
    return f"import json\n\nprint(json.dumps({value!r}))\n"


def _better(name: str) -> str:
    """A program whose construction beats the task's seed (found or published elsewhere)."""
    if name == "erdos_min_overlap":  # Haugland's 51 steps: C5 0.380927 against the seed's 0.5
        half = json.loads((DATA / "haugland_erdos_half.json").read_text())["half"]
        return f"import json\n\nhalf = {half!r}\nprint(json.dumps({{'h': half + half[-2::-1]}}))\n"
    if name == "autocorrelation_ac1":  # a short hill-climbed sequence: about 1.594 against 2
        return _printing({"heights": AC1_HEIGHTS})
    if name == "autocorrelation_ac2":  # likewise: about 0.836 against 2/3
        return _printing({"heights": AC2_HEIGHTS})
    if name == "circle_packing_26":  # TTT-Discover's packing: 2.63598 against 26/12
        circles = json.loads((DATA / "ttt_discover_circles_26.json").read_text())["circles"]
        return _printing({"circles": circles})
    # 30 grid circles of radius 1/12 in five rows, and two of radius 3/32 in the sixth row,
    # each in the cusp above two circles it touches: 30/12 + 6/32 = 2.6875 against 32/12.
    return (
        "import json\n\nr = 1 / 12\n"
        "circles = [[(2 * (i % 6) + 1) * r, (2 * (i // 6) + 1) * r, r] for i in range(30)]\n"
        "big = 3 / 32\n"
        "circles += [[2 / 12, 1 - big, big], [6 / 12, 1 - big, big]]\n"
        "print(json.dumps({'circles': circles}))\n"
    )


def _invalid(name: str) -> str:
    """A program whose construction breaks the problem's rules (by 1e-9 for the packings)."""
    if name == "erdos_min_overlap":
        return _printing({"h": [0.5, 1.5]})
    if name.startswith("autocorrelation"):
        return _printing({"heights": [1.0, -0.5]})
    count = int(name.rsplit("_", 1)[1])
    return (
        "import json\n\nr = 1 / 12\n"
        f"circles = [[(2 * (i % 6) + 1) * r, (2 * (i // 6) + 1) * r, r] for i in range({count})]\n"
        "circles[7][2] += 1e-9  # an inner circle now overlaps its four neighbours by 1e-9\n"
        "print(json.dumps({'circles': circles}))\n"
    )


class Constructions(NumberedScript):
    """The better construction, then the invalid one, then the seed again."""

    def __init__(self, better: str, invalid: str, seed: str) -> None:
        super().__init__()
        self.programs = {1: better, 2: invalid}
        self.seed = seed

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        program = self.programs.get(number, self.seed)
        return Reply(
            content=f"<solution>\n```python\n{program}```\n</solution>\n"
            f"<summary>Construction {number}.</summary>"
        )


def _printed(program: str) -> Any:
    """What the program prints, run here (this interpreter), apart from any verifier."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", program], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", TASKS)
def test_a_two_step_search_finds_the_better_construction_with_its_verifiers_score(
    name, tmp_path, reef_server, reset_reef_upstream, scripted_llm
):
    task_path = task_dir(name)
    seed = (task_path / "solution" / "solution.py").read_text(encoding="utf-8")
    better, invalid = _better(name), _invalid(name)
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = Constructions(better, invalid, seed)
    settings = {
        "groups": 1,
        "rollouts": 2,
        "steps": 2,
        "training": "off",
        "state_dir": str(tmp_path / "state"),
        "executor": "openai",
        "executor_base_url": scripted_llm.base_url,
        "executor_model": "exec-model",
        "judge_concurrency": 2,
    }
    result = run_search(
        agent_config(settings),
        load_task(task_path),
        task_path,
        environ={
            "REEF_URL": reef_server.url,
            "REEF_TOKEN": reef_server.token,
            "OPENAI_API_KEY": "sk-scripted",
        },
        console=Console(file=io.StringIO(), width=120),
    )
    assert [s.sampled for s in result.summaries] == [2, 2]
    facts = task_facts(task_path)

    # The best node is the better construction, scored exactly as its verifier scores it.
    best = result.best
    assert best is not None and best.entry.program == better
    verified = VerifierScorer(task_path, "python").score(better)
    assert best.raw_score == verified.raw_score
    assert best.entry.verification is not None
    assert best.entry.verification.reward == verified.reward
    assert best.entry.verification.receipt["scorer"] == "verifier"
    # ... which is what the problem's definition gives for what the program prints.
    problem = json.loads((task_path / "tests" / "problem.json").read_text())
    assert best.raw_score == pytest.approx(evaluate(problem, _printed(better)).raw_score, rel=1e-12)
    # The seed's node holds its score as measured (task.toml records the same number), and
    # the best beats it in the task's direction.
    library = Library.open(tmp_path / "state")
    try:
        root = library.archive.node(0)
    finally:
        library.close()
    seed_score = facts.seed_score
    assert root.entry.program == seed and root.raw_score == seed_score is not None
    assert best.raw_score < seed_score if facts.direction == "min" else best.raw_score > seed_score

    # Four rollouts: the invalid construction scored 0 with the verifier's reason.
    rollouts = []
    for step in range(2):
        state = read_step(step_journal_path(run_dir(tmp_path / "state"), step), step)
        rollouts += [done.rollout.verification.to_json() for done in state.finished.values()]
    assert len(rollouts) == 4
    (rejected,) = [v for v in rollouts if v["status"] == "invalid"]
    assert rejected["reward"] == 0.0 and rejected["raw_score"] is None
    assert rejected["message"].startswith("invalid: ")
    assert all(v["receipt"]["scorer"] == "verifier" for v in rollouts)
