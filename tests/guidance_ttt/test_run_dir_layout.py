"""The file names under a run's state directory are durable: a resume finds its state by them.

A run started by one version is resumed by the next, and the trainer and
the stack write into the same directory, so renaming any of these paths would
silently orphan an existing run's state. This list is the layout as it is on
disk; changing it is a migration, not a refactor.
"""

from __future__ import annotations

from pathlib import Path

from atoll.core.reef_env import RUN_DIR_ENV
from atoll.guidance_ttt.state.run_dir import RunDir

STATE = Path("/runs/polyomino")

GOLDEN = {
    "directory": "guidance-run",
    "working_archive": "guidance-run/library.json",
    "committed_archive": "guidance-run/committed-library.json",
    "archive_journal": "guidance-run/library.journal.jsonl",
    "archive_lock": "guidance-run/library.lock",
    "resume_state": "guidance-run/resume-state.json",
    "result": "guidance-run/result.json",
    "steps": "guidance-run/steps",
    "scorer_state": ".",
    "trainer_checkpoints": "reef/checkpoints/megatron",
    "trainer_checkpoint_marker": "reef/checkpoints/megatron/latest_checkpointed_iteration.txt",
    "trainer_job_marker": "reef/checkpoints/hf/.reef-latest-job.json",
    "stack_dir": "stack",
    "tinker_checkpoints": "guidance-run/tinker-checkpoints.jsonl",
    "tinker_policy_log": "guidance-run/tinker-policy.log",
}


def _relative(path: Path) -> str:
    return path.relative_to(STATE).as_posix()


def test_every_path_of_a_run_dir_keeps_its_name():
    layout = RunDir(STATE)
    named = {
        name
        for name, value in vars(RunDir).items()
        if isinstance(value, property) and name != "state_dir"
    }
    assert named == set(GOLDEN), "a RunDir path was added or removed: pin it in GOLDEN"
    assert {name: _relative(getattr(layout, name)) for name in GOLDEN} == GOLDEN


def test_step_files_and_reefs_run_dir_keep_their_names():
    layout = RunDir(STATE)
    assert _relative(layout.step_journal(7)) == "guidance-run/steps/step-00007.jsonl"
    assert _relative(layout.step_summary(12)) == "guidance-run/steps/step-00012.summary.json"
    assert _relative(layout.step_training(3)) == "guidance-run/steps/step-00003.training.json"
    assert _relative(layout.reef_run_dir({})) == "stack/reef-run"


def test_a_jobs_reef_run_dir_named_in_the_environment_wins(tmp_path):
    named = tmp_path / "job" / "reef-stack" / "reef-run"
    assert RunDir(STATE).reef_run_dir({RUN_DIR_ENV: str(named)}) == named
    # A blank value names nothing: the run's own stack's Reef run directory stays.
    assert _relative(RunDir(STATE).reef_run_dir({RUN_DIR_ENV: "  "})) == "stack/reef-run"
