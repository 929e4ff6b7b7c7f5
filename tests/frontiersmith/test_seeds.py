"""The shipped seed sets and user seed files: shape, schema, unique ids, clear errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from atoll.frontiersmith.seeds import SeedError, load_seeds

FIELDS = {"id", "title", "problem", "source", "license", "family"}


def test_textbook_set_has_20_seeds_with_exactly_the_fields() -> None:
    seeds = load_seeds("textbook")
    assert len(seeds) == 20
    assert all(set(s.to_json()) == FIELDS for s in seeds)
    assert len({s.id for s in seeds}) == 20


def test_domains_set_has_200_seeds_over_20_domains() -> None:
    seeds = load_seeds("domains")
    assert len(seeds) == 200
    families = Counter(s.family for s in seeds)
    assert len(families) == 20 and set(families.values()) == {10}
    for domain in (
        "graphs",
        "scheduling",
        "packing",
        "strings",
        "geometry",
        "number_theory",
        "dynamic_programming",
    ):
        assert domain in families
    assert len({s.id for s in seeds}) == 200
    assert len({s.problem for s in seeds}) == 200  # no text repeated


def test_the_two_sets_do_not_overlap_and_are_ours() -> None:
    textbook, domains = load_seeds("textbook"), load_seeds("domains")
    assert not {s.id for s in textbook} & {s.id for s in domains}
    assert all(
        s.license == "MIT" and s.source.startswith("atoll original") for s in textbook + domains
    )


def _seed(**changes: object) -> dict:
    seed = {
        "id": "my-seed",
        "title": "A title",
        "problem": "Given a list of numbers, report the largest sum of a contiguous run.",
        "source": "mine",
        "license": "CC0-1.0",
        "family": "sequences",
    }
    seed.update(changes)
    return seed


def test_user_file_as_a_json_list_and_as_jsonl(tmp_path: Path) -> None:
    listed = tmp_path / "seeds.json"
    listed.write_text(json.dumps([_seed(), _seed(id="second")]))
    lines = tmp_path / "seeds.jsonl"
    lines.write_text(json.dumps(_seed()) + "\n\n" + json.dumps(_seed(id="second")) + "\n")
    assert [s.id for s in load_seeds(str(listed))] == ["my-seed", "second"]
    assert load_seeds(str(lines)) == load_seeds(str(listed))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (_seed(extra="x"), "Additional properties"),
        ({k: v for k, v in _seed().items() if k != "license"}, "'license' is a required property"),
        (_seed(id="Bad Id"), "id"),
        (_seed(problem="short"), "problem"),
    ],
)
def test_invalid_seed_is_one_clear_error(tmp_path: Path, record: dict, message: str) -> None:
    path = tmp_path / "seeds.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(SeedError, match=message):
        load_seeds(str(path))


def test_duplicate_ids_unknown_names_and_broken_json(tmp_path: Path) -> None:
    path = tmp_path / "seeds.jsonl"
    path.write_text(json.dumps(_seed()) + "\n" + json.dumps(_seed()) + "\n")
    with pytest.raises(SeedError, match="appears twice"):
        load_seeds(str(path))
    with pytest.raises(SeedError, match="unknown seed set 'contests'.*textbook, domains"):
        load_seeds("contests")
    path.write_text("[{")
    with pytest.raises(SeedError, match="not valid JSON"):
        load_seeds(str(path))


@pytest.mark.parametrize(
    ("first", "second", "name"),
    [
        ("cart.v2", "cart-v2", "cart-v2"),  # '.' and '-' both become '-'
        ("cart", "cart.", "cart"),  # a trailing '-' is dropped
        ("a" * 63 + "-one", "a" * 63 + "-two", "a" * 63),  # cut at 63 characters
    ],
    ids=["dot and dash", "trailing dot", "past 63 characters"],
)
def test_ids_that_become_one_task_name_are_refused_naming_both(
    tmp_path: Path, first: str, second: str, name: str
) -> None:
    path = tmp_path / "seeds.jsonl"
    path.write_text(json.dumps(_seed(id=first)) + "\n" + json.dumps(_seed(id=second)) + "\n")
    with pytest.raises(SeedError) as refused:
        load_seeds(str(path))
    assert f"seed ids {first!r} and {second!r} both become the task name {name!r}" in str(
        refused.value
    )


@pytest.mark.slow
def test_the_command_refuses_them_before_anything_is_paid(venv_bin, tmp_path: Path) -> None:
    from support.frontiersmith_cli import emit

    path = tmp_path / "seeds.jsonl"
    path.write_text(json.dumps(_seed(id="p.1")) + "\n" + json.dumps(_seed(id="p-1")) + "\n")
    done = emit(
        venv_bin, tmp_path, "--seeds", str(path), "--target", "1", "--budget", "1",
        "--model", "scripted", "--base-url", "http://127.0.0.1:9/v1", "--price-in", "1",
        "--price-out", "1", "--environment", "atoll-local", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 2
    assert "seed ids 'p.1' and 'p-1' both become the task name 'p-1'" in done.stderr
    assert not (tmp_path / "out").exists()
