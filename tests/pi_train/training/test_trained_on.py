"""What a run trained on and started from, and the problems reserved for promotion (fast).

Runs are written by the training commands' own manifest writer
(`run.prepare_manifest`) from their own task lists; stores are atoll-euler's
`write_store` of the sample, extended past problem 10 (support.euler_stores).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.euler_stores import store_with
from support.pi_train_settings import train_settings
from typer.testing import CliRunner

from atoll.euler.curriculum import Config, State, save
from atoll.pi_train.answer import train as answer_train
from atoll.pi_train.answer.replay import ReplayError, ReplayMix
from atoll.pi_train.cli import train_app
from atoll.pi_train.euler_source import Store
from atoll.pi_train.hidden import sets as hidden_sets
from atoll.pi_train.promotion import reserved
from atoll.pi_train.shell import train as shell_train
from atoll.pi_train.training import run, tasks, trained_on

STATE = "tinker://model_7/weights/000002"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Problems 1-10 and 89-103: the reserved range and problems on both sides of it."""
    return store_with(tmp_path_factory.mktemp("euler") / "store", range(89, 104))


# --- the reserved range ---------------------------------------------------------------------


def test_numerical_order_never_reaches_the_reserved_problems(tmp_path: Path) -> None:
    full = store_with(tmp_path / "full", range(11, 104))
    listed = tasks.answer_tasks(full, ("python",), 2 * 93)  # two strategies per problem
    numbers = [t.number for t in listed]
    assert not reserved.reserved_among(numbers)
    assert list(dict.fromkeys(numbers)) == [*range(1, 91), 101, 102, 103]
    # Order from 1 stops at the first problem the store lacks (11 in the module's store),
    # and a store of reserved problems alone has nothing to train: problem 1 is missing.
    only = store_with(tmp_path / "only-reserved", range(91, 101), sample=False)
    with pytest.raises(tasks.TaskSetError, match="numerical order and stops there"):
        tasks.answer_tasks(only, ("python",), 4)


def _curriculum(directory: Path, store: Store, current: int, mastered: list[int]) -> Path:
    config = Config(store_digest=store.digest, languages=("python",), approaches=("direct",))
    state = State.new(config)
    state.current_problem, state.mastered, state.mastered_through = current, mastered, current - 1
    save(directory, state)
    return directory


def test_a_curriculum_at_a_reserved_problem_is_refused(store: Store, tmp_path: Path) -> None:
    state = _curriculum(tmp_path / "cur", store, 93, [*range(1, 11), 89, 90, 91, 92])
    with pytest.raises(ReplayError) as caught:
        answer_train.curriculum_tasks(store, state, train_settings(), ReplayMix())
    message = str(caught.value)
    assert "problem 93" in message and "reserved for promotion" in message
    assert "\n" not in message


def test_reserved_problems_the_curriculum_mastered_are_never_replayed(
    store: Store, tmp_path: Path
) -> None:
    mastered = [*range(1, 11), 89, 90, *range(91, 101)]
    state = _curriculum(tmp_path / "cur", store, 101, mastered)
    settings = train_settings(groups_per_batch=10, iterations=10)
    training, held_out, record = answer_train.curriculum_tasks(store, state, settings, ReplayMix())
    drawn = {t.number for t in [*training, *held_out]}
    assert not reserved.reserved_among(drawn)
    assert {t.number for t in training} >= {101, 89, 90}  # the frontier and recent replays
    pools = record["mix"]["pools"]
    assert not reserved.reserved_among(pools["replay-recent"] + pools["replay-older"])
    assert record["curriculum"]["reserved_left_out"] == list(range(91, 101))


def test_the_answer_command_refuses_a_reserved_frontier_in_one_line_before_writing(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINKER_API_KEY", "tml-x")
    state = _curriculum(tmp_path / "cur", store, 95, [*range(1, 11), 89, 90])
    out = tmp_path / "run"
    done = CliRunner().invoke(
        train_app,
        ["answer", "--base-model", "m", "--store", str(store.root), "--out", str(out),
         "--curriculum", str(state), "--languages", "python"],
    )  # fmt: skip
    assert done.exit_code == 2
    errors = [line for line in done.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "reserved for promotion" in errors[0], done.output
    assert not out.exists()


# --- what a run records ---------------------------------------------------------------------


def _answer_run(directory: Path, store: Store, groups: int, **extra: object) -> dict:
    settings = train_settings(groups_per_batch=groups, **extra)  # type: ignore[arg-type]
    listed = tasks.answer_tasks(store, settings.languages, run.groups_needed(settings))
    return run.prepare_manifest(
        directory,
        "atoll pi train answer",
        settings,
        {"digest": tasks.digest(listed), "groups": len(listed), "store": store.digest},
        {},
        {},
        trained=trained_on.answer_record(listed),
    )


def test_each_training_command_records_what_it_trains_on() -> None:
    hidden = trained_on.hidden_record(tasks.hidden_tasks(("python", "javascript"), 6))
    assert hidden["euler_problems"] == [1, 2]  # the families stand for problems 1 and 2
    assert hidden["family_instances"] == {
        "multiples": {"split": "train", "generator": "hidden-variant-v1", "indices": [[0, 1]]},
        "recurrence": {"split": "train", "generator": "hidden-variant-v1", "indices": [[0, 0]]},
    }
    assert hidden["hidden_case_sets"]["count"] == 3
    one = trained_on.hidden_record(tasks.hidden_tasks(("python",), 1))
    assert one["euler_problems"] == [1]
    assert one["hidden_case_sets"]["sha256"] != hidden["hidden_case_sets"]["sha256"]

    shell = trained_on.shell_record(
        shell_train.train_tasks(("python",), 5), shell_train.eval_tasks(("python",), 1)
    )
    assert shell["euler_problems"] == []
    # Five groups over four families (in the mixed order): one family's instances 0 and 1.
    indices = sorted(f["indices"] for f in shell["family_instances"].values())
    assert indices == [[[0, 0]], [[0, 0]], [[0, 0]], [[0, 1]]]
    first = sorted(shell["family_instances"])[0]
    assert shell["evaluated_only"]["family_instances"][first]["split"] == "eval"
    # hidden's held-out instances are evaluated only, from the eval namespace.
    held = trained_on.hidden_record(
        hidden_sets.train_tasks(("python",), 2, 2, seed=0), hidden_sets.eval_tasks(("python",), 2)
    )
    assert held["evaluated_only"]["family_instances"]["multiples"] == {
        "split": "eval",
        "generator": "hidden-variant-v1",
        "indices": [[0, 1]],
    }
    assert {f["split"] for f in held["family_instances"].values()} == {"train"}

    boot = trained_on.bootstrap_record("c" * 64)
    assert boot["euler_problems"] == [] and boot["family_instances"] == {}


def test_the_manifest_records_the_task_list_and_a_longer_run_records_more(
    store: Store, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    manifest = _answer_run(out, store, 2)
    assert manifest["trained_on"]["euler_problems"] == [1]
    assert manifest["started_from"] is None
    (out / "checkpoints.jsonl").write_text('{"batch": 1, "state_path": "tinker://r/weights/1"}\n')
    longer = _answer_run(out, store, 2, iterations=3)  # a resume with more iterations
    assert longer["trained_on"]["euler_problems"] == [1, 2, 3]
    saved = json.loads((out / "manifest.json").read_text())
    assert saved["trained_on"] == longer["trained_on"]


def test_a_run_started_from_a_directory_copies_that_runs_record(
    store: Store, tmp_path: Path
) -> None:
    parent = tmp_path / "parent"
    _answer_run(parent, store, 4)
    (parent / "checkpoints.jsonl").write_text(json.dumps({"batch": 1, "state_path": STATE}) + "\n")
    child = tmp_path / "child"
    lineage = trained_on.started_from(str(parent), STATE, store)
    assert lineage is not None
    assert lineage["run_dir"] == str(parent.resolve()) and lineage["state"] == STATE
    assert lineage["trained_on"]["euler_problems"] == [1, 2]
    settings = train_settings(load_checkpoint=STATE)
    listed = tasks.hidden_tasks(("python",), 2)
    run.prepare_manifest(
        child, "atoll pi train hidden", settings, {"digest": tasks.digest(listed)}, {}, {},
        trained=trained_on.hidden_record(listed), started_from=lineage,
    )  # fmt: skip
    chain = trained_on.chain_problems(child, store)
    assert not chain.unrecorded
    assert sorted(chain.trained) == [1, 2]
    assert any("atoll pi train answer" in w for w in chain.trained[2])
    assert any("atoll pi train hidden" in w for w in chain.trained[1])
    # The copy outlives the earlier directory.
    for path in parent.iterdir():
        path.unlink()
    parent.rmdir()
    assert sorted(trained_on.chain_problems(child, store).trained) == [1, 2]

    # Resumed by the bare state path, the run keeps the lineage it recorded.
    (child / "checkpoints.jsonl").write_text(json.dumps({"batch": 1, "state_path": STATE}) + "\n")
    run.prepare_manifest(
        child, "atoll pi train hidden", settings, {"digest": tasks.digest(listed)}, {}, {},
        trained=trained_on.hidden_record(listed),
        started_from=trained_on.started_from(STATE, STATE),
    )  # fmt: skip
    assert json.loads((child / "manifest.json").read_text())["started_from"] == lineage


def test_a_state_named_by_its_path_alone_is_recorded_as_untraced(
    store: Store, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    # No lineage given at all: a loaded state is never taken for a base model.
    _answer_run(out, store, 2, load_checkpoint=STATE)
    saved = json.loads((out / "manifest.json").read_text())
    assert saved["started_from"]["state"] == STATE and saved["started_from"]["unrecorded"]
    chain = trained_on.chain_problems(out, store)
    assert chain.trained == {1: [f"atoll pi train answer in {out}"]}
    assert len(chain.unrecorded) == 1 and STATE in chain.unrecorded[0]


# --- runs written before the record existed -------------------------------------------------


def _older(run_dir: Path, manifest: dict) -> Path:
    run_dir.mkdir(parents=True)
    old = {k: v for k, v in manifest.items() if k not in ("trained_on", "started_from")}
    if old["config"].get("load_checkpoint") is None:
        old["config"].pop("load_checkpoint", None)
    (run_dir / "manifest.json").write_text(json.dumps(old))
    return run_dir


def test_older_runs_are_read_from_what_their_manifest_holds(store: Store, tmp_path: Path) -> None:
    made = _answer_run(tmp_path / "new-answer", store, 6)
    answer = _older(tmp_path / "answer", made)
    found = trained_on.run_record(answer, store)
    assert found.derived and found.trained_on is not None and not found.unrecorded
    assert found.trained_on["euler_problems"] == [1, 2, 3]
    assert found.started_from is None
    # Its problems follow from its store: without that store, one line says which to give.
    other = store_with(tmp_path / "sample", [])
    for given in (None, other):
        missing = trained_on.run_record(answer, given)
        assert missing.trained_on is None and "give that store with --store" in str(
            missing.unrecorded
        )

    settings = train_settings(languages=("python", "javascript"), groups_per_batch=3)
    listed = tasks.hidden_tasks(settings.languages, 3)
    hidden = run.prepare_manifest(
        tmp_path / "new-hidden", "atoll pi train hidden", settings,
        {"digest": tasks.digest(listed), "groups": 3}, {}, {},
    )  # fmt: skip
    assert trained_on.run_record(_older(tmp_path / "hidden", hidden)).trained_on == (
        trained_on.hidden_record(listed)
    )
    # A loaded state in an older manifest cannot be traced.
    loaded = dict(made, config={**made["config"], "load_checkpoint": STATE})
    chain = trained_on.chain_problems(_older(tmp_path / "loaded", loaded), store)
    assert sorted(chain.trained) == [1, 2, 3] and "before runs recorded" in chain.unrecorded[0]


@pytest.mark.parametrize(
    ("command", "problems"), [("atoll pi train shell", []), ("atoll pi bootstrap train", [])]
)
def test_older_file_and_bootstrap_runs_trained_on_no_euler_problem(
    tmp_path: Path, command: str, problems: list[int]
) -> None:
    manifest = {"command": command, "config": {"base_model": "m"}, "task_set": {"digest": "d"}}
    found = trained_on.run_record(_older(tmp_path / "run", manifest))
    assert found.trained_on is not None and found.trained_on["euler_problems"] == problems


def test_a_directory_that_is_no_run_is_untraced(tmp_path: Path) -> None:
    found = trained_on.chain_problems(tmp_path)
    assert found.unrecorded == [f"{tmp_path} holds no readable training manifest"]
    (tmp_path / "manifest.json").write_text(json.dumps({"command": "something else"}))
    assert "records no training set" in trained_on.chain_problems(tmp_path).unrecorded[0]


def test_answer_training_records_its_problems_and_the_reservation(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's own path, up to the trainer: a run whose iterations are all saved."""
    monkeypatch.setenv("TINKER_API_KEY", "tml-x")
    out = tmp_path / "run"
    out.mkdir()
    (out / "checkpoints.jsonl").write_text(json.dumps({"batch": 3, "state_path": STATE}) + "\n")
    settings = replace(train_settings(), groups_per_batch=2, iterations=3)
    answer_train.train_answer(settings, out, store.root, lambda *_: None, lambda _line: None)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["trained_on"]["euler_problems"] == [1, 2, 3]
    assert manifest["started_from"] is None
    assert manifest["reserved_for_promotion"] == "91-100"
