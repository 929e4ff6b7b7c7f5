"""What `atoll pi train promote` takes and refuses before anything is served or sampled.

The run directory is written as a training run leaves it (the training
commands' own manifest writer, with what the run trained on; the cookbook's
`checkpoints.jsonl`); the store is atoll-euler's built-in sample extended
with the problems reserved for promotion (support.euler_stores). The
end-to-end promotion is in test_tinker_serve.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.euler_stores import store_with
from support.pi_train_settings import train_settings

from atoll.pi_train.promotion import family as promotion_family
from atoll.pi_train.promotion import promote
from atoll.pi_train.promotion.promote import Evaluation, PromoteError, Request
from atoll.pi_train.training import run as training
from atoll.pi_train.training import tasks, trained_on

SAMPLER = "tinker://model_1/000002"
STATE = "tinker://model_1/weights/000002"
RULE = {
    "format": 2,
    "checkpoints": 2,
    "transfer": {"min_delta": 0.1, "alpha": 0.25},
    "euler": {"min_delta": 0.0, "alpha": 0.5},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_with(tmp_path_factory.mktemp("euler") / "store", range(91, 101)).root


def _training_run(run_dir: Path, store: Path, groups: int = 4, **changes: object) -> Path:
    """An answer run's directory as the command leaves it: trained on problems 1-2 by default."""
    settings = train_settings(base_model="/models/tiny", groups_per_batch=groups, **changes)  # type: ignore[arg-type]
    listed = tasks.answer_tasks(tasks.store_at(store), settings.languages, groups)
    training.prepare_manifest(
        run_dir,
        "atoll pi train answer",
        settings,
        {"digest": tasks.digest(listed), "groups": len(listed)},
        {},
        {},
        trained=trained_on.answer_record(listed),
    )
    return run_dir


@pytest.fixture
def run(tmp_path: Path, store: Path) -> Path:
    run = _training_run(tmp_path / "run", store)
    rows = [
        {
            "name": "000001",
            "batch": 1,
            "state_path": "tinker://model_1/weights/000001",
            "sampler_path": "tinker://model_1/000001",
        },
        {"name": "000002", "batch": 2, "state_path": STATE, "sampler_path": SAMPLER},
    ]
    (run / "checkpoints.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


@pytest.fixture
def rule(tmp_path: Path) -> Path:
    path = tmp_path / "rule.json"
    path.write_text(json.dumps(RULE))
    return path


def _request(run: Path, rule: Path, store: Path, **change: object) -> Request:
    evaluation = Evaluation(
        store=str(store), problems="93-95", languages="python", samples=2, transfer_samples=1,
        max_turns=4, timeout=60.0, max_tokens=16,
    )  # fmt: skip
    fields: dict[str, object] = {
        "run_dir": run, "checkpoint": SAMPLER, "rule_file": rule, "evaluation": evaluation,
        "tinker_url": "http://127.0.0.1:1",
    }  # fmt: skip
    fields.update(change)
    return Request(**fields)  # type: ignore[arg-type]


def test_a_run_checkpoint_is_planned_with_the_runs_model_and_its_state(
    run: Path, rule: Path, store: Path
) -> None:
    made = promote.plan(_request(run, rule, store))
    assert (made.base_model, made.renderer) == ("/models/tiny", "qwen3")
    assert made.directory.parent == run / "promotions" and len(made.directory.name) == 12
    assert not made.directory.exists()  # nothing is written before the writer lock is held
    assert made.manifest["identity"]["checkpoint"] == SAMPLER
    assert made.manifest["identity"]["evaluation"]["store_digest"]
    assert promote._saved_states(run)[SAMPLER] == STATE

    fixed = promote.fix_rule(made)
    written = json.loads((made.directory / "manifest.json").read_text())
    assert written["rule"] == RULE and written["rule_sha256"] == made.rule.sha256()
    assert written == fixed.manifest and written["comparison"] == 1
    # The first promotion fixes the run's one rule.
    fixed_for_run = json.loads((run / "promotion_rule.json").read_text())
    assert fixed_for_run["rule"] == RULE and fixed_for_run["rule_sha256"] == made.rule.sha256()
    # The same inputs plan the same promotion (a rerun resumes it); it keeps its first fixing.
    again = promote.fix_rule(promote.plan(_request(run, rule, store)))
    assert again.directory == made.directory and again.manifest == written


@pytest.mark.parametrize(
    "change",
    [
        {"baseline_checkpoint": "tinker://model_0/000009"},
        {"base_model": "/models/tiny", "renderer": "qwen3"},
        {"checkpoint": "tinker://model_1/000001"},
    ],
)
def test_honest_variations_are_planned(
    run: Path, rule: Path, store: Path, change: dict[str, object]
) -> None:
    made = promote.plan(_request(run, rule, store, **change))
    assert made.manifest["rule_sha256"] == made.rule.sha256()


def test_another_rule_or_setting_is_another_promotion(
    run: Path, rule: Path, store: Path, tmp_path: Path
) -> None:
    first = promote.plan(_request(run, rule, store)).directory
    looser = tmp_path / "looser.json"
    looser.write_text(json.dumps({**RULE, "transfer": {"min_delta": 0.0, "alpha": 0.25}}))
    assert promote.plan(_request(run, looser, store)).directory != first
    other = promote.plan(_request(run, rule, store, checkpoint="tinker://model_1/000001")).directory
    assert other != first


def test_rollouts_at_a_time_are_not_part_of_the_promotion(
    run: Path, rule: Path, store: Path
) -> None:
    """--workers changes how long a side takes, not what is measured: a resume may change it."""
    one = promote.plan(_request(run, rule, store))
    four = promote.plan(_request(run, rule, store, workers=4))
    assert four.directory == one.directory
    assert "workers" not in json.dumps(four.manifest)


def test_a_run_without_a_training_manifest_is_refused_and_one_without_a_model_takes_flags(
    rule: Path, store: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(PromoteError, match="holds no readable training manifest") as caught:
        promote.plan(_request(bare, rule, store, base_model="Qwen/Qwen3-4B", renderer="qwen3"))
    assert "\n" not in str(caught.value)
    # A manifest that says what the run trained on but not its model: the flags give it.
    (bare / "manifest.json").write_text(
        json.dumps({"command": "atoll pi train answer", "trained_on": trained_on.record()})
    )
    made = promote.plan(_request(bare, rule, store, base_model="Qwen/Qwen3-4B", renderer="qwen3"))
    assert (made.base_model, made.renderer) == ("Qwen/Qwen3-4B", "qwen3")
    with pytest.raises(PromoteError, match="--base-model is needed"):
        promote.plan(_request(bare, rule, store))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checkpoint": "tinker://model_1/000007"}, "is not a sampler checkpoint of"),
        ({"checkpoint": "/tmp/adapter"}, "--checkpoint must be a tinker:// sampler checkpoint"),
        ({"baseline_checkpoint": "model_0"}, "--baseline-checkpoint must be a tinker://"),
        (
            {"base_model": "/models/other"},
            "--base-model /models/other differs from the training run's",
        ),
        ({"renderer": "llama3"}, "--renderer llama3 differs"),
    ],
)
def test_inputs_that_cannot_be_promoted_are_one_line_before_anything_is_written(
    run: Path, rule: Path, store: Path, change: dict[str, object], message: str
) -> None:
    with pytest.raises(PromoteError) as caught:
        promote.plan(_request(run, rule, store, **change))
    assert message in str(caught.value) and caught.value.code == 2
    assert not (run / "promotions").exists()


def test_bad_evaluation_settings_are_refused(run: Path, rule: Path, store: Path) -> None:
    base = _request(run, rule, store)
    with pytest.raises(PromoteError, match="--problems"):
        promote.plan(
            _request(
                run,
                rule,
                store,
                evaluation=Evaluation(**{**base.evaluation.__dict__, "problems": "x"}),
            )
        )
    missing = {**base.evaluation.__dict__, "system_prompt": str(run / "absent.md")}
    with pytest.raises(PromoteError, match="--system-prompt"):
        promote.plan(_request(run, rule, store, evaluation=Evaluation(**missing)))
    with pytest.raises(PromoteError, match="store"):
        promote.plan(_request(run, rule, run / "no-store"))


@pytest.mark.parametrize("languages", ["python", "python,javascript", " Python , javascript"])
def test_everyday_language_lists_are_planned(
    run: Path, rule: Path, store: Path, languages: str
) -> None:
    base = _request(run, rule, store)
    evaluation = Evaluation(**{**base.evaluation.__dict__, "languages": languages})
    assert promote.plan(_request(run, rule, store, evaluation=evaluation)).manifest


@pytest.mark.parametrize(
    ("languages", "message"), [("ruby", "unknown language"), (",", "no language")]
)
def test_unknown_languages_are_refused_before_anything_is_written(
    run: Path, rule: Path, store: Path, languages: str, message: str
) -> None:
    base = _request(run, rule, store)
    evaluation = Evaluation(**{**base.evaluation.__dict__, "languages": languages})
    with pytest.raises(PromoteError, match=message) as caught:
        promote.plan(_request(run, rule, store, evaluation=evaluation))
    assert caught.value.code == 2 and not (run / "promotions").exists()


@pytest.mark.slow  # imports the Docker and Pi clients
@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"TINKER_API_KEY": ""}, "TINKER_API_KEY is not set"),
        ({"TINKER_API_KEY": "tml-x", "DOCKER_HOST": "tcp://127.0.0.1:1"}, "no Docker engine"),
    ],
)
def test_a_promotion_without_a_key_or_an_engine_stops_before_the_rule_is_fixed(
    run: Path,
    rule: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    message: str,
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(PromoteError, match=message) as caught:
        promote.promote(_request(run, rule, store), lambda _line: None)
    assert caught.value.code == 2 and "\n" not in str(caught.value)
    assert not (run / "promotions").exists()


@pytest.mark.parametrize(
    ("tinker_url", "served_from"),
    [
        ("http://127.0.0.1:8000", STATE),  # SkyRL tx on this machine: the saved state
        ("http://localhost:8000", STATE),
        ("http://[::1]:8000", STATE),
        ("https://tinker.example", None),  # hosted Tinker samples the checkpoint itself
        ("http://10.0.0.5:8000", None),
    ],
)
def test_the_saved_state_is_served_only_from_skyrl_tx_on_loopback(
    run: Path, tinker_url: str, served_from: str | None
) -> None:
    assert promote.serving_state(run, SAMPLER, tinker_url) == served_from
    assert promote.serving_state(run, None, tinker_url) is None  # the base model


# --- promotion problems the run never trained on ----------------------------------------------


def _with_problems(request: Request, problems: str) -> Request:
    evaluation = Evaluation(**{**request.evaluation.__dict__, "problems": problems})
    return _request(
        request.run_dir, request.rule_file, Path(evaluation.store), evaluation=evaluation
    )


def test_problems_the_run_trained_on_are_refused_by_name(
    run: Path, rule: Path, store: Path
) -> None:
    with pytest.raises(PromoteError) as caught:
        promote.plan(_with_problems(_request(run, rule, store), "2-4,95"))
    message = str(caught.value)
    assert message.startswith("--problems 2-4,95 includes problems trained on (2 by ")
    assert f"atoll pi train answer in {run}" in message and "91-100" in message
    assert caught.value.code == 2 and "\n" not in message
    assert not (run / "promotions").exists()
    assert promote.plan(_with_problems(_request(run, rule, store), "3-5")).manifest


def test_problems_an_earlier_run_in_the_chain_trained_on_are_refused(
    rule: Path, store: Path, tmp_path: Path
) -> None:
    """answer (problems 1-4) -> shell from its directory: promoting the shell run on 3-5."""
    first = _training_run(tmp_path / "answer", store, groups=8)
    (first / "checkpoints.jsonl").write_text(json.dumps({"batch": 1, "state_path": STATE}) + "\n")
    second = tmp_path / "shell"
    training.prepare_manifest(
        second, "atoll pi train shell", train_settings(base_model="/models/tiny", load_checkpoint=STATE),
        {}, {}, {}, trained=trained_on.record(),
        started_from=trained_on.started_from(str(first), STATE),
    )  # fmt: skip
    request = _request(second, rule, store)
    with pytest.raises(PromoteError, match=f"3-4 by atoll pi train answer in {first.resolve()}"):
        promote.plan(_with_problems(request, "3-5"))
    assert promote.plan(_with_problems(request, "5-7")).manifest


def test_a_chain_that_cannot_be_traced_is_refused_in_one_line(
    rule: Path, store: Path, tmp_path: Path
) -> None:
    loaded = _training_run(tmp_path / "loaded", store, load_checkpoint=STATE)  # a bare state
    with pytest.raises(PromoteError) as caught:
        promote.plan(_request(loaded, rule, store))
    message = str(caught.value)
    assert message.startswith(f"cannot show the promotion problems disjoint from what {loaded}")
    assert "named by its tinker:// path" in message and "\n" not in message


def test_an_older_run_is_checked_from_what_its_manifest_holds(
    rule: Path, store: Path, tmp_path: Path
) -> None:
    older = _training_run(tmp_path / "older", store)
    manifest = json.loads((older / "manifest.json").read_text())
    for key in ("trained_on", "started_from"):
        del manifest[key]  # written before runs recorded them
    manifest["task_set"]["store"] = tasks.store_at(store).digest
    (older / "manifest.json").write_text(json.dumps(manifest))
    assert promote.plan(_request(older, rule, store)).manifest
    with pytest.raises(PromoteError, match="includes problems trained on"):
        promote.plan(_with_problems(_request(older, rule, store), "1,3-4"))


def test_the_default_problems_are_the_reserved_range(
    run: Path, rule: Path, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from atoll.euler import sample_catalog, write_store
    from atoll.pi_train.cli import train_app

    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    args = ["promote", str(run), "--checkpoint", SAMPLER, "--rule", str(rule)]
    # On a store holding 91-100 the problems pass; the missing key is the next refusal.
    done = CliRunner().invoke(train_app, [*args, "--store", str(store)])
    assert done.exit_code == 2 and "TINKER_API_KEY is not set" in done.output, done.output
    # The sample store ends at 10: the default names 91.
    sample = tmp_path / "sample"
    write_store(sample_catalog(), sample)
    done = CliRunner().invoke(train_app, [*args, "--store", str(sample)])
    assert done.exit_code == 2 and "problem 91 is not in the store" in done.output, done.output
    assert not (run / "promotions").exists()


# --- one rule per run, and how many comparisons it allows -------------------------------------


def test_a_second_rule_for_the_same_run_is_refused(
    run: Path, rule: Path, store: Path, tmp_path: Path
) -> None:
    promote.fix_rule(promote.plan(_request(run, rule, store)))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**RULE, "euler": {"min_delta": 0.0, "alpha": 0.4}}))
    before = sorted(p.name for p in (run / "promotions").iterdir())
    with pytest.raises(PromoteError) as caught:
        promote.plan(_request(run, other, store, checkpoint="tinker://model_1/000001"))
    assert "fixed another promotion rule" in str(caught.value) and caught.value.code == 2
    assert sorted(p.name for p in (run / "promotions").iterdir()) == before
    # The same rule, spelled in TOML, is the same rule.
    toml = tmp_path / "rule.toml"
    toml.write_text(
        "format = 2\ncheckpoints = 2\n[transfer]\nmin_delta = 0.1\nalpha = 0.25\n"
        "[euler]\nmin_delta = 0.0\nalpha = 0.5\n"
    )
    made = promote.plan(_request(run, toml, store, checkpoint="tinker://model_1/000001"))
    assert promote.fix_rule(made).manifest["comparison"] == 2


def test_a_promotion_past_the_rules_comparisons_is_refused(
    run: Path, store: Path, tmp_path: Path
) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps({**RULE, "checkpoints": 1}))
    first = promote.fix_rule(promote.plan(_request(run, one, store)))
    # The same promotion resumes; another checkpoint would be a second comparison.
    assert promote.fix_rule(promote.plan(_request(run, one, store))).manifest["comparison"] == 1
    with pytest.raises(PromoteError) as caught:
        promote.plan(_request(run, one, store, checkpoint="tinker://model_1/000001"))
    assert "allows 1 promotion(s) and all are taken" in str(caught.value)
    assert first.directory.name in str(caught.value)


def test_promotions_from_before_the_run_rule_are_refused(
    run: Path, rule: Path, store: Path
) -> None:
    earlier = run / "promotions" / "0123456789ab"
    earlier.mkdir(parents=True)
    (earlier / "manifest.json").write_text(json.dumps({"rule": {"format": 1}}))
    with pytest.raises(PromoteError, match="before one rule per run was fixed"):
        promote.plan(_request(run, rule, store))


@pytest.mark.parametrize(
    ("rule_change", "problems", "message"),
    [
        # One problem: the paired test's smallest p is 1/2, Holm over 2 makes it 1.
        ({"euler": {"min_delta": 0.0, "alpha": 0.5}}, "93", "euler.alpha 0.5 can never hold"),
        # Four transfer tasks: 1/16, and 1/8 over two checkpoints.
        ({"transfer": {"min_delta": 0.0, "alpha": 0.1}}, "93-95", "transfer.alpha 0.1 can never"),
    ],
)
def test_a_rule_no_outcome_could_meet_is_refused(
    run: Path,
    store: Path,
    tmp_path: Path,
    rule_change: dict[str, object],
    problems: str,
    message: str,
) -> None:
    path = tmp_path / "strict.json"
    path.write_text(json.dumps({**RULE, **rule_change}))
    with pytest.raises(PromoteError, match=message):
        promote.plan(_with_problems(_request(run, path, store), problems))
    assert not (run / "promotions").exists()


def test_holm_counts_every_comparison_the_rule_allows(
    run: Path, store: Path, tmp_path: Path
) -> None:
    three = tmp_path / "three.json"
    three.write_text(json.dumps({**RULE, "checkpoints": 3}))
    first = promote.fix_rule(promote.plan(_request(run, three, store)))
    second = promote.fix_rule(
        promote.plan(_request(run, three, store, checkpoint="tinker://model_1/000001"))
    )
    # Alone (the other two at p = 1): 3 x 0.01.
    alone = promotion_family.holm_family(
        run, second.rule, second.directory, {"euler": 0.01, "transfer": None}
    )
    assert alone["m"] == 3 and alone["made"] == 2
    assert alone["p_adjusted"]["euler"] == pytest.approx(0.03)
    assert alone["p_adjusted"]["transfer"] == 1.0
    # The first decided with euler p = 0.004: the second is now Holm's second step, 2 x 0.01.
    (first.directory / "promotion.json").write_text(
        json.dumps({"euler": {"test": {"p_greater": 0.004}}, "transfer": {"test": {}}})
    )
    family = promotion_family.holm_family(
        run, second.rule, second.directory, {"euler": 0.01, "transfer": 0.5}
    )
    assert family["p_adjusted"]["euler"] == pytest.approx(0.02)
    assert family["p_adjusted"]["transfer"] == 1.0  # 3 x 0.5, capped
    assert [m["comparison"] for m in family["members"]] == [1, 2]
    assert family["members"][0]["decided"] is True
