"""Which judge scored a run is in its identity and run.json; a resume under another is refused.

The controller-level tests drive one-rollout search-only steps with scripted
services, so they run in well under a second each. The judges themselves are
real: the session's embedded judge (as `atoll run`'s job plugin starts one and
names it in FRONTIERCS_JUDGE_URL) and `atoll judge serve` in a process of its
own (a judge serving on its own, known by its URL).
"""

from __future__ import annotations

import io
import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from guidance_builders import entry, valid
from harbor.models.agent.context import AgentContext
from rich.console import Console

from atoll.guidance_ttt.config import GuidanceConfig, IdentityChanged, load_config
from atoll.guidance_ttt.contract import Task, load_contract
from atoll.guidance_ttt.harbor.trial_outputs import RUN_FILE, write_outputs
from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.search import controller
from atoll.guidance_ttt.search.scored_program import Verification
from atoll.guidance_ttt.services.executor import ExecutorAnswer
from atoll.guidance_ttt.services.reef_guidance import GuidanceSample
from atoll.guidance_ttt.services.scorer import JUDGE_URL_ENV, task_judge
from atoll.guidance_ttt.services.training_barrier import SearchOnlyBarrier
from atoll.guidance_ttt.services.wiring import run_search
from atoll.guidance_ttt.state import resume

pytest_plugins = ["support.fixtures", "judge_process"]

EXAMPLE_CONTRACT = Path(__file__).parents[2] / "tasks" / "frontiersmith-example" / "contract.json"
VERSION = metadata.version("atoll-frontiercs-judge")
EMBEDDED = {"kind": "embedded", "address": "embedded", "version": VERSION}
REMOTE = {"kind": "remote", "address": "http://judge.example:8081", "version": VERSION}


class Guidance:
    """Reef's side of a rollout: well-formed guidance under a fresh receipt, reports acknowledged."""

    def __init__(self) -> None:
        self.calls = 0

    def sample(self, prompt: Prompt, seed: int | None = None) -> GuidanceSample:
        self.calls += 1
        return GuidanceSample(
            f"receipt-{self.calls}", "<guidance>pack the corners first</guidance>", None, "stop", 8
        )

    def report(self, payload: dict[str, Any], receipt: str) -> str:
        return f"report-{receipt}"


class Executor:
    """A program per answer, new each time, so every rollout adds a node."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, prompt: Prompt) -> ExecutorAnswer:
        self.calls += 1
        program = f"int main() {{ return {self.calls}; }}"
        content = f"<solution>\n```cpp\n{program}\n```\n</solution>\n<summary>Variant.</summary>"
        return ExecutorAnswer(content, None, "stop", 16)


class Scorer:
    def score(self, program: str) -> Verification:
        return valid(50.0)


def _config(state_dir: Path, steps: int) -> GuidanceConfig:
    overrides = {"training": "off", "groups": 1, "rollouts": 1, "steps": steps}
    return load_config(overrides={**overrides, "state_dir": str(state_dir)})


def _run(state_dir: Path, task: Task, judge: resume.Judge, steps: int) -> controller.RunResult:
    """Start or resume the run in `state_dir` up to `steps`, scored (it says) by `judge`."""
    return controller.run(
        _config(state_dir, steps),
        task,
        entry("int main() { return 0; }", 10.0),
        guidance=Guidance(),
        executor=Executor(),
        scorer=Scorer(),
        barrier=SearchOnlyBarrier(),
        judge=judge,
        console=Console(file=io.StringIO()),
    )


def _saved_judge(state_dir: Path) -> Any:
    data = json.loads(resume.resume_path(state_dir).read_text())
    return data["identity"].get(resume.JUDGE, "absent")


def _files(state_dir: Path) -> dict[str, bytes]:
    """Every file under the state directory and its bytes: what a refusal must leave alone."""
    return {
        str(path.relative_to(state_dir)): path.read_bytes()
        for path in sorted(state_dir.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize("judge", [EMBEDDED, REMOTE], ids=["embedded", "remote"])
def test_the_judge_is_recorded_in_the_identity_and_run_json(tmp_path, task, judge):
    state_dir = tmp_path / "state"
    _run(state_dir, task, judge, steps=1)
    recorded = {**judge, "since_step": 0}
    assert _saved_judge(state_dir) == recorded

    logs = tmp_path / "logs"
    logs.mkdir()
    write_outputs(_config(state_dir, 1), task, logs, AgentContext())
    summary = json.loads((logs / RUN_FILE).read_text())
    assert summary["identity"]["judge"] == recorded
    assert summary["judge"] == recorded


def test_a_scorer_that_is_no_judge_records_none(tmp_path, task):
    state_dir = tmp_path / "state"
    _run(state_dir, task, None, steps=1)
    assert _saved_judge(state_dir) is None
    assert task_judge(load_contract(EXAMPLE_CONTRACT), {}) is None  # the checker scorer
    _run(state_dir, task, None, steps=2)


@pytest.mark.parametrize(
    ("other", "says"),
    [
        (
            REMOTE,
            f"from the embedded judge (version {VERSION}) to the judge at {REMOTE['address']}",
        ),
        (
            {**EMBEDDED, "version": "9.9.9"},
            f"from the embedded judge (version {VERSION}) to the embedded judge (version 9.9.9)",
        ),
    ],
    ids=["kind-and-address", "version"],
)
def test_a_resume_under_another_judge_is_refused_in_one_line_and_changes_nothing(
    tmp_path, task, other, says
):
    state_dir = tmp_path / "state"
    _run(state_dir, task, EMBEDDED, steps=1)
    before = _files(state_dir)

    with pytest.raises(IdentityChanged) as refused:
        _run(state_dir, task, other, steps=2)

    message = str(refused.value)
    assert message.startswith(f"cannot resume: the judge changed {says}"), message
    assert "\n" not in message and str(state_dir) in message
    assert message.endswith(
        f"resume with the embedded judge (atoll-frontiercs-judge {VERSION} installed, "
        f"{JUDGE_URL_ENV} unset or naming an embedded judge), or start a new state directory"
    )
    assert _files(state_dir) == before


def test_a_remote_judge_at_another_address_is_refused_with_its_own_url_to_use(tmp_path, task):
    state_dir = tmp_path / "state"
    _run(state_dir, task, REMOTE, steps=1)
    before = _files(state_dir)
    moved = {**REMOTE, "address": "http://judge.example:9090"}
    with pytest.raises(IdentityChanged, match="resume with FRONTIERCS_JUDGE_URL=") as refused:
        _run(state_dir, task, moved, steps=2)
    assert f"{JUDGE_URL_ENV}={REMOTE['address']} serving that judge" in str(refused.value)
    assert _files(state_dir) == before


@pytest.mark.parametrize("judge", [EMBEDDED, REMOTE], ids=["embedded", "remote"])
def test_the_same_judge_resumes(tmp_path, task, judge):
    state_dir = tmp_path / "state"
    _run(state_dir, task, judge, steps=1)
    result = _run(state_dir, task, dict(judge), steps=2)
    assert len(result.summaries) == 2
    assert _saved_judge(state_dir) == {**judge, "since_step": 0}


def test_a_state_saved_before_judges_were_recorded_resumes_and_records_the_judge(tmp_path, task):
    state_dir = tmp_path / "state"
    _run(state_dir, task, EMBEDDED, steps=1)
    path = resume.resume_path(state_dir)
    old = json.loads(path.read_text())
    del old["identity"][resume.JUDGE]
    path.write_text(json.dumps(old))

    _run(state_dir, task, REMOTE, steps=2)  # unknown before: nothing to compare with
    assert _saved_judge(state_dir) == {**REMOTE, "since_step": 1}  # claims no earlier step
    with pytest.raises(IdentityChanged, match="cannot resume: the judge changed"):
        _run(state_dir, task, EMBEDDED, steps=3)  # from then on, it is checked


# The real judges: what each says it is, and a refusal through `run_search`.


def test_with_no_judge_url_the_run_records_the_embedded_judge_it_would_start(monkeypatch, task):
    monkeypatch.delenv(JUDGE_URL_ENV, raising=False)
    assert task_judge(task.contract, {}) == EMBEDDED


def test_an_embedded_judge_named_by_url_is_recorded_as_embedded(task, judge_url):
    # As under `atoll run`: the job plugin's embedded judge, on a port of the moment.
    assert task_judge(task.contract, {JUDGE_URL_ENV: judge_url}) == EMBEDDED


def test_a_judge_serving_on_its_own_is_recorded_by_its_url(task, judge_process):
    _, url = judge_process
    assert task_judge(task.contract, {JUDGE_URL_ENV: url}) == {
        "kind": "remote",
        "address": url,
        "version": VERSION,
    }


def test_run_search_refuses_another_judge_before_any_service_starts(
    tmp_path, task, judge_process, judge_url
):
    _, served = judge_process
    state_dir = tmp_path / "state"
    _run(state_dir, task, task_judge(task.contract, {JUDGE_URL_ENV: judge_url}), steps=1)
    before = _files(state_dir)
    config = _config(state_dir, 2)
    # No Reef answers here: the refusal comes before any service is opened.
    environ = {JUDGE_URL_ENV: served, "REEF_URL": "http://127.0.0.1:9"}

    with pytest.raises(IdentityChanged) as refused:
        run_search(config, task, tmp_path / "task", environ=environ)

    message = str(refused.value)
    assert message.startswith(
        f"cannot resume: the judge changed from the embedded judge (version {VERSION}) "
        f"to the judge at {served} (version {VERSION}) in state dir {state_dir}; "
    )
    assert "\n" not in message
    assert _files(state_dir) == before
    saved = resume.load(state_dir)
    assert saved is not None  # and the judge it started with passes the same check
    saved.check_judge(task_judge(task.contract, {JUDGE_URL_ENV: judge_url}), state_dir)
