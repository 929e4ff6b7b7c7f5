"""What `atoll pi train promote` takes and refuses before anything is served or sampled.

The run directory is written as a training run leaves it (the manifest's
`config`, the cookbook's `checkpoints.jsonl`); the store is atoll-euler's
built-in sample. The end-to-end promotion is in test_tinker_serve.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atoll.pi_train import promote
from atoll.pi_train.promote import Evaluation, PromoteError, Request

SAMPLER = "tinker://model_1/000002"
STATE = "tinker://model_1/weights/000002"
RULE = {
    "format": 1,
    "transfer": {"min_delta": 0.1, "alpha": 0.05},
    "euler": {"min_delta": 0.0, "alpha": 0.5},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from atoll.euler import sample_catalog, write_store

    path = tmp_path_factory.mktemp("euler") / "store"
    write_store(sample_catalog(), path)
    return path


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    config = {"base_model": "/models/tiny", "renderer": "qwen3", "lora_rank": 8, "iterations": 2}
    (run / "manifest.json").write_text(
        json.dumps({"command": "atoll pi train hidden", "config": config})
    )
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
        store=str(store), problems="1-3", languages="python", samples=2, transfer_samples=1,
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
    assert written == fixed.manifest
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
    looser.write_text(json.dumps({**RULE, "transfer": {"min_delta": 0.0, "alpha": 0.05}}))
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


def test_a_run_without_a_training_manifest_takes_the_model_from_the_flags(
    rule: Path, store: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
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
