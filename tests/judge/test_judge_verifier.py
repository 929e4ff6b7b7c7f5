"""The Harbor verifier `frontiercs-judge` on a real trial environment (atoll-local)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from harbor.models.task.task import Task
from harbor.verifier.factory import VerifierFactory
from support.judge_reference import row_ratio
from support.local_env import local_environment

from atoll.core.records import Kind
from atoll.core.registry import load
from atoll.judge.client import JudgeUnavailable
from atoll.judge.embedded import EmbeddedJudge
from atoll.judge.problems import Problem

pytestmark = pytest.mark.timeout(300)

TASK = Path(__file__).parent / "tasks" / "polyomino-candidate"
IMPORT_PATH = "atoll.judge.verifier:FrontierCSJudgeVerifier"


def verify(
    tmp_path: Path, candidate: bytes | None, env: dict[str, str], **kwargs: object
) -> tuple[dict, Path]:
    """Run the verifier as Harbor would, on a trial whose workspace holds `candidate`."""
    environment = local_environment(
        tmp_path / "trial", TASK / "environment", "polyomino-candidate", log_mounts=True
    )
    paths = environment.trial_paths
    task = Task(TASK)

    async def main() -> dict:
        await environment.start(force_build=False)
        try:
            if candidate is not None:
                local = tmp_path / "candidate.cpp"
                local.write_bytes(candidate)
                await environment.upload_file(local, "/workspace/solution.cpp")
            verifier = VerifierFactory.create_verifier_from_import_path(
                IMPORT_PATH,
                task=task,
                trial_paths=paths,
                environment=environment,
                override_env=env,
                **kwargs,
            )
            result = await verifier.verify()
            return dict(result.rewards or {})
        finally:
            await environment.stop(delete=True)

    return asyncio.run(main()), paths.verifier_dir


def test_registered_with_the_host() -> None:
    record = load().get(Kind.VERIFIER, "frontiercs-judge")
    assert record.target == IMPORT_PATH
    assert record.requires == ("g++", "bwrap")
    command = load().get(Kind.COMMAND, "judge")
    assert command.target == "atoll.judge.cli:app" and command.requires == ("g++", "bwrap")


def test_reward_is_the_judges_score(
    tmp_path: Path, small_judge: EmbeddedJudge, sources: dict[str, bytes], problem0: Problem
) -> None:
    rewards, verifier_dir = verify(
        tmp_path, sources["row"], {"FRONTIERCS_JUDGE_URL": small_judge.url}
    )
    expected = 50 * sum(row_ratio(problem0.case_input(i).decode()) for i in (20, 12))
    assert rewards["reward"] == pytest.approx(expected, abs=1e-4)
    assert rewards["raw_score"] == pytest.approx(expected, abs=1e-4)
    assert json.loads((verifier_dir / "reward.json").read_text()) == rewards
    report = json.loads((verifier_dir / "judge.json").read_text())
    assert report["status"] == "scored" and len(report["cases"]) == 2


@pytest.mark.slow
def test_embedded_judge_when_no_url_is_given(
    tmp_path: Path, sources: dict[str, bytes], state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FRONTIERCS_JUDGE_URL", raising=False)
    monkeypatch.setenv("ATOLL_JUDGE_STATE", str(state_dir))  # shares the session's binaries
    rewards, _ = verify(tmp_path, sources["row"], {})
    assert rewards["reward"] == pytest.approx(27.810517627, abs=1e-4)


def test_configurable_candidate_path(
    tmp_path: Path, small_judge: EmbeddedJudge, sources: dict[str, bytes]
) -> None:
    rewards, verifier_dir = verify(
        tmp_path,
        sources["row"],
        {"FRONTIERCS_JUDGE_URL": small_judge.url},
        solution_path="/workspace/other.cpp",
    )
    assert rewards == {"reward": 0.0, "raw_score": 0.0}
    report = json.loads((verifier_dir / "judge.json").read_text())
    assert "no candidate at /workspace/other.cpp" in report["reason"]


def test_compile_error_earns_zero(
    tmp_path: Path, small_judge: EmbeddedJudge, sources: dict[str, bytes]
) -> None:
    rewards, verifier_dir = verify(
        tmp_path, sources["broken"], {"FRONTIERCS_JUDGE_URL": small_judge.url}
    )
    assert rewards == {"reward": 0.0, "raw_score": 0.0}
    report = json.loads((verifier_dir / "judge.json").read_text())
    assert report["status"] == "invalid" and "undefined_symbol" in report["reason"]


def test_unreachable_judge_raises_and_writes_no_reward(
    tmp_path: Path, sources: dict[str, bytes]
) -> None:
    with pytest.raises(JudgeUnavailable):
        verify(tmp_path, sources["row"], {"FRONTIERCS_JUDGE_URL": "http://127.0.0.1:9"})
    assert not (tmp_path / "trial" / "verifier" / "reward.json").exists()
