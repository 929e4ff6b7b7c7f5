"""Replay and forgetting without a Tinker server: the mixture's proportions, the regression
window that never reaches a training batch, and the manifest and report that carry both."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.pi_train_settings import train_settings

from atoll.euler import load_curriculum, rows, sample_catalog, write_store
from atoll.euler.curriculum import Config, State, save
from atoll.pi_train.answer import replay
from atoll.pi_train.answer import train as answer_train
from atoll.pi_train.answer.replay import ReplayError, ReplayMix
from atoll.pi_train.euler_source import CurriculumError, Store
from atoll.pi_train.training import run, summary
from atoll.pi_train.training.run import TrainSettings

CONDITIONS = [("python", "direct"), ("python", "derive")]


def _plan(mastered: list[int], count: int, mix: ReplayMix | None = None) -> replay.ReplayPlan:
    return replay.plan(11, mastered, CONDITIONS, count, mix or ReplayMix(), "seed")


def test_the_default_mix_is_70_20_10_over_the_run_and_in_every_batch_of_ten() -> None:
    chosen = _plan(list(range(1, 11)), 100)
    assert chosen.counts() == {"frontier": 70, "replay-recent": 20, "replay-older": 10}
    for start in range(0, 100, 10):
        batch = chosen.slots[start : start + 10]
        assert [sum(s.source == src for s in batch) for src in replay.SOURCES] == [7, 2, 1]
    # Every prefix of the run keeps each share to within one group.
    for k in range(1, 101):
        for source, share in ReplayMix().shares().items():
            dealt = sum(s.source == source for s in chosen.slots[:k])
            assert abs(dealt - k * share) <= 1, (k, source)


def test_frontier_groups_train_the_current_problem_and_replays_come_from_their_pools() -> None:
    chosen = _plan(list(range(1, 11)), 40)
    assert chosen.regression == [1, 2]
    assert chosen.recent == [8, 9, 10] and chosen.older == [3, 4, 5, 6, 7]
    for slot in chosen.slots:
        pool = {
            "frontier": [11],
            "replay-recent": chosen.recent,
            "replay-older": chosen.older,
        }[slot.source]
        assert slot.problem in pool
    frontier = [s for s in chosen.slots if s.source == "frontier"]
    assert [(s.language, s.strategy) for s in frontier[:4]] == CONDITIONS * 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.5,0.25,0.25", {"frontier": 4, "replay-recent": 2, "replay-older": 2}),
        ("1,0,0", {"frontier": 8, "replay-recent": 0, "replay-older": 0}),
        ("0.5,0.5,0", {"frontier": 4, "replay-recent": 4, "replay-older": 0}),
        ("0.75,0.125,0.125", {"frontier": 6, "replay-recent": 1, "replay-older": 1}),
    ],
)
def test_the_flags_change_the_mix(text: str, expected: dict[str, int]) -> None:
    assert _plan(list(range(1, 11)), 8, ReplayMix.parse(text)).counts() == expected


@pytest.mark.parametrize(
    "text", ["0.7,0.2,0.1", "0.6, 0.3, 0.1", "0.9,0.05,0.05", "1,0,0", "0.34,0.33,0.33", ".5,.5,0"]
)
def test_everyday_mixes_are_accepted(text: str) -> None:
    mix = ReplayMix.parse(text)
    assert sum(mix.shares().values()) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text", ["0.7,0.2", "0.7,0.2,0.2", "0,0.5,0.5", "0.8,-0.1,0.3", "a,b,c", "0.7;0.2;0.1"]
)
def test_a_mix_that_is_not_three_shares_summing_to_one_is_refused(text: str) -> None:
    with pytest.raises(ReplayError, match="--replay"):
        ReplayMix.parse(text)


def test_sources_without_problems_drop_out_and_the_rest_keep_their_proportions() -> None:
    assert _plan([], 10).counts() == {"frontier": 10, "replay-recent": 0, "replay-older": 0}
    # Two mastered: one in the window, one recent, no older: 70:20 renormalized.
    only_recent = _plan([1, 2], 90)
    assert only_recent.regression == [1] and only_recent.recent == [2]
    assert only_recent.counts() == {"frontier": 70, "replay-recent": 20, "replay-older": 0}


def test_regression_window_problems_never_appear_in_a_training_slot() -> None:
    for size in range(0, 5):
        for mastered_count in range(0, 14):
            mastered = list(range(1, mastered_count + 1))
            chosen = _plan(mastered, 60, ReplayMix(regression_window=size))
            assert chosen.regression == mastered[: min(size, max(mastered_count - 1, 0))]
            assert not {s.problem for s in chosen.slots} & set(chosen.regression)
            if mastered:  # the most recently mastered problem is always left to replay
                assert mastered[-1] not in chosen.regression


def test_the_same_state_gives_the_same_plan_and_another_seed_may_differ() -> None:
    one = _plan(list(range(1, 11)), 50)
    assert one.slots == _plan(list(range(1, 11)), 50).slots
    other = replay.plan(11, list(range(1, 11)), CONDITIONS, 50, ReplayMix(), "another")
    assert [s.source for s in one.slots] == [s.source for s in other.slots]


@pytest.fixture
def sample_store(tmp_path: Path) -> Store:
    root = tmp_path / "store"
    write_store(sample_catalog(), root)
    return Store(root)


def _curriculum(directory: Path, store: Store, current: int, mastered: list[int]) -> Path:
    config = Config(store_digest=store.digest, languages=("python",), approaches=("direct",))
    state = State.new(config)
    state.current_problem, state.mastered, state.mastered_through = current, mastered, current - 1
    save(directory, state)
    return directory


def _settings(iterations: int = 5) -> TrainSettings:
    return train_settings(base_model="m", groups_per_batch=4, iterations=iterations)


def test_curriculum_tasks_tag_their_source_and_keep_the_window_for_evaluation(
    sample_store: Store, tmp_path: Path
) -> None:
    state = _curriculum(tmp_path / "cur", sample_store, 7, [1, 2, 3, 4, 5, 6])
    training, held_out, record = answer_train.curriculum_tasks(
        sample_store, state, _settings(5), ReplayMix()
    )
    assert len(training) == 20
    window = record["regression_window"]["problems"]
    assert window == [1, 2] and record["regression_window"]["receives_gradients"] is False
    assert {t.number for t in held_out} == set(window)
    assert all(t.public()["tags"][0] == replay.REGRESSION_TAG for t in held_out)
    assert not {t.number for t in training} & set(window)
    assert record["mix"]["groups"] == {"frontier": 14, "replay-recent": 4, "replay-older": 2}
    assert record["curriculum"]["current_problem"] == 7
    for task in training:
        source, problem_tag = task.public()["tags"][:2]
        assert source in replay.SOURCES and problem_tag == f"p{task.number}"
        assert ("7" in problem_tag) == (source == "frontier")
    # Nothing a trainer is given carries an answer.
    shown = json.dumps([t.public() for t in [*training, *held_out]])
    for number in (1, 2, 3, 4, 5, 6, 7):
        assert sample_store.expected(number) not in shown


def test_the_regression_window_is_sampled_group_size_times_per_condition(
    sample_store: Store, tmp_path: Path
) -> None:
    """As the README says: each language x strategy of the window, `--group-size` samples."""
    state = _curriculum(tmp_path / "cur", sample_store, 7, [1, 2, 3, 4, 5, 6])
    settings = train_settings(base_model="m", group_size=3)
    _, held_out, record = answer_train.curriculum_tasks(sample_store, state, settings, ReplayMix())
    assert record["regression_window"]["group_size"] == 3
    job = answer_train.regression_job(held_out, record)
    assert job["eval_group_size"] == 3 and len(job["eval_tasks"]) == len(held_out) == 2 * 2
    assert answer_train.regression_job([], None) == {}


# The trainer's own held-out dataset, in the managed interpreter: how many episodes of each
# evaluation task the cookbook's evaluator samples.
_HELD_OUT = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from train import _held_out

job = json.loads(sys.stdin.read())
dataset = _held_out(job, None, None)
print(json.dumps([len(asyncio.run(b.make_envs())) for b in dataset.get_batch(0)]))
"""


@pytest.mark.slow
def test_the_trainer_samples_each_window_task_group_size_times_and_shell_eval_once(
    sample_store: Store, tmp_path: Path
) -> None:
    from support import ci

    from atoll.pi_train import env as managed_env

    managed = managed_env.installed()
    ci.need(
        managed is not None,
        "the managed trainer environment is not built here",
        "CI builds it (the tiny_model fixture) before the pi-train tests",
    )
    assert managed is not None
    state = _curriculum(tmp_path / "cur", sample_store, 7, [1, 2, 3, 4, 5, 6])
    settings = train_settings(base_model="m", group_size=3)
    _, held_out, record = answer_train.curriculum_tasks(sample_store, state, settings, ReplayMix())
    base = {"mode": "answer", "tasks": [], "groups_per_batch": 2, "group_size": 3,
            "iterations": 1, "system_prompt": ""}  # fmt: skip
    shell_like = {**base, "eval_tasks": [t.public() for t in held_out]}
    sizes = []
    for job in ({**base, **answer_train.regression_job(held_out, record)}, shell_like):
        done = subprocess.run(
            [str(managed.python), "-c", _HELD_OUT, str(managed_env.managed_script("train").parent)],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        sizes.append(json.loads(done.stdout.splitlines()[-1]))
    assert sizes == [[3] * len(held_out), [1] * len(held_out)]


def test_a_curriculum_of_another_store_or_none_at_all_is_refused(
    sample_store: Store, tmp_path: Path
) -> None:
    with pytest.raises(CurriculumError, match="no curriculum state"):
        answer_train.curriculum_tasks(sample_store, tmp_path / "empty", _settings(), ReplayMix())
    other = Config(store_digest="0" * 64, languages=("python",), approaches=("direct",))
    save(tmp_path / "other", State.new(other))
    with pytest.raises(CurriculumError, match="another store"):
        answer_train.curriculum_tasks(sample_store, tmp_path / "other", _settings(), ReplayMix())


SIGNATURE = "5" * 64
SERVED = "tinker://run-1/sampler_weights/000004"  # what `atoll tinker serve` reports
STATE = "tinker://run-1/weights/000004"  # the training state saved beside it


def _measured(directory: Path, store: Store, model: str, revision: str | None) -> Path:
    """A curriculum whose round was run on `model` at `revision` (its state and its rows)."""
    _curriculum(directory, store, 7, [1, 2, 3, 4, 5, 6])
    state = load_curriculum(directory)
    assert state is not None
    state.model_signature = SIGNATURE
    save(directory, state)
    row = {
        "row_format": rows.ROW_FORMAT, "run_id": "curriculum-0001", "phase": "frontier",
        "problem": 7, "language": "python", "approach": "direct", "sample": 0, "model": model,
        "model_revision": revision, "model_signature": SIGNATURE, "status": "scored",
        "passed": False,
    }  # fmt: skip
    (directory / "rounds" / "0001").mkdir(parents=True)
    rows.append(directory / "rounds" / "0001" / rows.ROWS_FILE, row)
    return directory


@pytest.mark.parametrize(
    ("model", "revision", "load_checkpoint"),
    [
        ("m", None, None),  # the base model, measured and trained
        ("m", SERVED, STATE),  # the checkpoint served, and its state loaded
        ("m", STATE, STATE),  # a revision declared as the state path itself
    ],
)
def test_a_curriculum_of_the_model_being_trained_is_accepted(
    sample_store: Store, tmp_path: Path, model: str, revision: str | None, load_checkpoint: str
) -> None:
    state = _measured(tmp_path / "cur", sample_store, model, revision)
    settings = train_settings(base_model="m", load_checkpoint=load_checkpoint)
    _, _, record = answer_train.curriculum_tasks(sample_store, state, settings, ReplayMix())
    assert record["curriculum"]["model_signature"] == SIGNATURE


@pytest.mark.parametrize(
    ("model", "revision", "base_model", "load_checkpoint"),
    [
        ("other", None, "m", None),  # another model
        ("m", SERVED, "m", None),  # a checkpoint measured, the base model trained
        ("m", None, "m", STATE),  # the base model measured, a checkpoint trained
        ("m", "tinker://run-1/sampler_weights/000002", "m", STATE),  # an earlier checkpoint
        ("m", "tinker://run-2/sampler_weights/000004", "m", STATE),  # another run's
    ],
)
def test_a_curriculum_that_measured_another_model_is_refused(
    sample_store: Store,
    tmp_path: Path,
    model: str,
    revision: str | None,
    base_model: str,
    load_checkpoint: str | None,
) -> None:
    state = _measured(tmp_path / "cur", sample_store, model, revision)
    settings = train_settings(base_model=base_model, load_checkpoint=load_checkpoint)
    with pytest.raises(CurriculumError) as caught:
        answer_train.curriculum_tasks(sample_store, state, settings, ReplayMix())
    message = str(caught.value)
    assert "\n" not in message and "measured another model" in message
    assert f"{model} at {revision or 'the base model'}" in message
    assert f"m from {load_checkpoint or 'the base model'}" in message


def test_a_signature_no_row_explains_is_refused(sample_store: Store, tmp_path: Path) -> None:
    state_dir = _measured(tmp_path / "cur", sample_store, "m", None)
    (state_dir / "rounds" / "0001" / rows.ROWS_FILE).unlink()
    with pytest.raises(CurriculumError, match="none of its rows says which model"):
        answer_train.curriculum_tasks(sample_store, state_dir, _settings(), ReplayMix())


def test_the_manifest_and_the_summary_carry_the_mix_and_the_window(
    sample_store: Store, tmp_path: Path
) -> None:
    state = _curriculum(tmp_path / "cur", sample_store, 7, [1, 2, 3, 4, 5, 6])
    _, _, record = answer_train.curriculum_tasks(sample_store, state, _settings(5), ReplayMix())
    out = tmp_path / "run"
    manifest = run.prepare_manifest(
        out, "atoll pi train answer", _settings(5), {"digest": "d" * 64}, {}, {"replay": record}
    )
    saved = json.loads((out / "manifest.json").read_text())
    assert saved["replay"]["mix"]["configured"] == {
        "frontier": 0.7,
        "replay-recent": 0.2,
        "replay-older": 0.1,
    }
    assert saved["replay"]["regression_window"]["problems"] == [1, 2]
    text = summary.write(out, manifest).read_text()
    assert "Replay mix configured 70% frontier / 20% recent / 10% older" in text
    assert "frontier 14 (problem 7)" in text
    assert (
        "Regression window (evaluation only, never a gradient): problems [1, 2], "
        "every 5 iteration(s), 2 samples per language x strategy." in text
    )
    # A resumed run (one with a saved state) under another mix is refused rather than mixed in.
    (out / "checkpoints.jsonl").write_text('{"batch": 1, "state_path": "tinker://r/weights/1"}\n')
    _, _, other = answer_train.curriculum_tasks(
        sample_store, state, _settings(5), ReplayMix.parse("0.5,0.3,0.2")
    )
    with pytest.raises(run.RunInputError, match="replay"):
        run.prepare_manifest(
            out, "atoll pi train answer", _settings(5), {"digest": "d" * 64}, {}, {"replay": other}
        )


@pytest.mark.slow
def test_the_command_refuses_a_bad_mix_with_one_line_before_anything_is_written(
    tmp_path: Path, venv_bin: Path
) -> None:
    from support.tinker_local import run_atoll

    out = tmp_path / "run"
    done = run_atoll(
        venv_bin, {"TINKER_API_KEY": "tml-x"}, "pi", "train", "answer", "--base-model", "m",
        "--store", str(tmp_path / "store"), "--out", str(out), "--replay", "0.5,0.2",
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("error:") == 1 and "--replay" in done.stderr
    assert not out.exists()
