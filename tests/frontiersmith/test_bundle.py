"""Writing and reading bundles: the layout, the modes, task.toml, the hash, atomicity, resume."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest
from harbor.models.task.config import TaskConfig

from atoll.checker import grader_source, layout
from atoll.frontiersmith.bundle import (
    DEFAULT_BASE_IMAGE,
    OFFLINE_BASE_IMAGE,
    BundleError,
    BundleSpec,
    read_bundle,
    render_bundle,
    write_bundle,
)
from atoll.frontiersmith.bundle import write as write_module

EXPECTED_FILES = {
    "task.toml": 0o644,
    "instruction.md": 0o644,
    "environment/Dockerfile": 0o644,
    "solution/solution.py": 0o644,
    "solution/solve.sh": 0o755,
    "tests/test.sh": 0o755,
    "tests/grader.py": 0o644,
    "tests/generator.py": 0o644,
    "tests/scorer.py": 0o644,
    "tests/feasibility.py": 0o644,
    "tests/contract.json": 0o644,
}


def _tree(root: Path) -> dict[str, int]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            path = Path(dirpath, name)
            found[str(path.relative_to(root)) + "/"] = stat.S_IMODE(path.lstat().st_mode)
        for name in filenames:
            path = Path(dirpath, name)
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def test_exactly_the_layout_with_exact_modes(tmp_path, spec):
    old = os.umask(0o077)  # modes must not depend on the writer's umask
    try:
        info = write_bundle(tmp_path / "toy", spec)
    finally:
        os.umask(old)
    assert _tree(tmp_path / "toy") == EXPECTED_FILES | {
        "environment/": 0o755,
        "solution/": 0o755,
        "tests/": 0o755,
    }
    assert set(info.files) == set(EXPECTED_FILES) and not info.resumed
    assert (tmp_path / "toy" / "tests" / "grader.py").read_bytes() == grader_source()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy"]  # no temporary left


def test_task_toml_is_harbor_schema_with_the_metadata(tmp_path, spec):
    info = write_bundle(tmp_path / "toy", spec)
    text = (tmp_path / "toy" / "task.toml").read_text()
    config = TaskConfig.model_validate_toml(text)
    assert config.task is not None and config.task.name == "frontiersmith/toy"
    assert (config.environment.cpus, config.environment.memory_mb) == (1, 2048)
    assert (config.agent.user, config.agent.network_mode.value) == ("solver", "no-network")
    assert (config.verifier.user, config.verifier.network_mode.value) == ("root", "no-network")
    assert config.environment.network_mode.value == "no-network"
    meta = tomllib.loads(text)["metadata"]
    assert meta["recipe"] == "frontiersmith" and meta["recipe_version"] == "1"
    assert meta["mutation"] == "objective"
    assert meta["seed_lineage"] == {"seed": "toy-1", "family": "toy", "license": "MIT"}
    assert meta["reference"] == "best sampled feasible solution, not proven optimum"
    assert set(meta["reward_kinds"]) == {"reward"}
    assert (meta["verification"], meta["verification_stage"]) == ("unverified", "construction")
    assert meta["bundle_hash"] == info.bundle_hash and info.bundle_hash.startswith("sha256:")
    assert meta["reference_reward"] == 0.75


def test_instruction_states_the_runtime_limits(tmp_path, spec):
    write_bundle(tmp_path / "toy", spec)
    text = (tmp_path / "toy" / "instruction.md").read_text()
    assert text.startswith('# Pick a number\n\nPrint `{"x": v}`')
    for row in (
        "| CPU time | 1 s |",
        "| Wall clock | 2 s |",
        "| Memory (address space) | 256 MiB |",
        "| Processes (including threads) | 8 |",
        "| Program size | 64 KiB |",
    ):
        assert row in text
    assert "/workspace/solution.py" in text and "python3 -I solution.py" in text


@pytest.mark.parametrize(
    "image",
    [DEFAULT_BASE_IMAGE, OFFLINE_BASE_IMAGE, "registry.example/python:3.11@sha256:" + "a" * 64],
)
def test_base_image_is_a_parameter(tmp_path, spec, image):
    files, _ = render_bundle(dataclasses.replace(spec, base_image=image))
    dockerfile = files["environment/Dockerfile"].data.decode()
    assert f"\nFROM {image}\n" in dockerfile
    assert "useradd --create-home --shell /bin/bash solver" in dockerfile
    assert "USER solver\nWORKDIR /workspace\n" in dockerfile


def test_default_base_image_is_the_public_python_image(spec):
    assert spec.base_image == DEFAULT_BASE_IMAGE == "python:3.12-slim"


def test_same_spec_same_bytes_same_hash(tmp_path, spec):
    first = write_bundle(tmp_path / "a", spec)
    second = write_bundle(tmp_path / "b", spec)
    assert first.bundle_hash == second.bundle_hash == render_bundle(spec)[1]
    for name in EXPECTED_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    changed = write_bundle(tmp_path / "c", dataclasses.replace(spec, mutation="input_constraints"))
    assert changed.bundle_hash != first.bundle_hash


def test_read_back_equals_the_spec(tmp_path, spec):
    info = write_bundle(tmp_path / "toy", spec)
    bundle = read_bundle(tmp_path / "toy")
    assert bundle.spec == spec and bundle.bundle_hash == info.bundle_hash


def test_resume_keeps_an_identical_bundle_and_refuses_a_different_one(tmp_path, spec):
    target = tmp_path / "toy"
    first = write_bundle(target, spec)
    before = {p: p.stat().st_mtime_ns for p in target.rglob("*")}
    again = write_bundle(target, spec)
    assert again.resumed and again.bundle_hash == first.bundle_hash
    assert {p: p.stat().st_mtime_ns for p in target.rglob("*")} == before
    with pytest.raises(BundleError, match="already holds a different bundle"):
        write_bundle(target, dataclasses.replace(spec, title="Another title"))
    (target / "tests" / "scorer.py").write_text("def score(i, o):\n    return 1.0\n")
    with pytest.raises(BundleError, match="not a sound bundle"):
        write_bundle(target, spec)


def test_a_failed_write_leaves_nothing(tmp_path, spec, monkeypatch):
    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(write_module.os, "rename", crash)
    with pytest.raises(OSError, match="disk full"):
        write_bundle(tmp_path / "toy", spec)
    assert list(tmp_path.iterdir()) == []


def test_stale_partials_of_dead_writers_are_removed_live_ones_kept(tmp_path, spec):
    host = os.uname().nodename
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".toy.partial-{host}-{dead.pid}-abcd"
    live = tmp_path / f".toy.partial-{host}-{os.getppid()}-abcd"
    other = tmp_path / f".toy.partial-elsewhere-{dead.pid}-abcd"
    for path in (stale, live, other):
        path.mkdir()
    write_bundle(tmp_path / "toy", spec)
    assert not stale.exists() and live.exists() and other.exists()


def _write_in_child(args: tuple[Path, BundleSpec]) -> str:
    target, spec = args
    return write_bundle(target, spec).bundle_hash


@pytest.mark.slow
def test_concurrent_writers_agree(tmp_path, spec):
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        hashes = pool.map(_write_in_child, [(tmp_path / "toy", spec)] * 8)
    assert len(set(hashes)) == 1
    assert read_bundle(tmp_path / "toy").bundle_hash == hashes[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(name="Not A Slug"), "bundle name"),
        (dict(mutation="rewrite"), "mutation"),
        (dict(title="two\nlines"), "one non-empty line"),
        (dict(scorer="def score(:\n"), "does not parse"),
        (dict(seed_lineage={"bad key": "x"}), "seed_lineage key"),
        (dict(reference_reward=1.5), "reference_reward"),
        (dict(base_image="not an image!"), "base image"),
    ],
)
def test_bad_specs_fail_before_anything_is_written(spec, change, message):
    with pytest.raises(BundleError, match=message):
        dataclasses.replace(spec, **change)


def test_layout_constants_match_what_the_writer_makes():
    assert layout.FILES == EXPECTED_FILES


SEARCH = {
    "scorer": "checker",
    "solution_language": "python",
    "mechanism_constraint": "One Python program within the limits.",
    "objective": "Print the largest number allowed.",
    "raw_score_label": "mean per-instance score",
    "score_direction": "max",
    "solution_contract": "a complete Python 3 program printing one JSON object",
}
BASELINE = 'import json\nprint(json.dumps({"x": 0.25}))\n'


@pytest.fixture
def searchable(spec):
    return dataclasses.replace(
        spec,
        baseline=BASELINE,
        baseline_summary="Prints a quarter.",
        solution_summary="Prints three quarters.",
        search_contract=SEARCH,
    )


def test_the_search_files_are_written_read_back_and_hashed(tmp_path, spec, searchable):
    info = write_bundle(tmp_path / "toy", searchable)
    root = tmp_path / "toy"
    optional = {name: _tree(root)[name] for name in layout.OPTIONAL}
    assert optional == dict.fromkeys(layout.OPTIONAL, 0o644)
    assert json.loads((root / "contract.json").read_text()) == SEARCH
    assert (root / "solution" / "baseline.py").read_text() == BASELINE
    assert read_bundle(root).spec == searchable
    # Each search file is part of the bundle's identity; without them the hash is the old one.
    assert info.bundle_hash != render_bundle(spec)[1]
    for change in (
        {"search_contract": SEARCH | {"objective": "Print the smallest number."}},
        {"baseline": BASELINE.replace("0.25", "0.5")},
        {"baseline_summary": "Prints a half."},
    ):
        assert render_bundle(dataclasses.replace(searchable, **change))[1] != info.bundle_hash


def test_an_edited_search_contract_breaks_the_bundle_hash(tmp_path, searchable):
    write_bundle(tmp_path / "toy", searchable)
    contract = tmp_path / "toy" / "contract.json"
    contract.write_text(json.dumps(SEARCH | {"score_direction": "min"}))
    with pytest.raises(BundleError, match="does not match its hash"):
        read_bundle(tmp_path / "toy")
    contract.unlink()  # taking it away is a change too
    with pytest.raises(BundleError, match="does not match its hash"):
        read_bundle(tmp_path / "toy")


def test_a_bundle_without_search_files_verifies_as_before(tmp_path, spec):
    info = write_bundle(tmp_path / "toy", spec)
    assert not any((tmp_path / "toy" / name).exists() for name in layout.OPTIONAL)
    assert read_bundle(tmp_path / "toy").bundle_hash == info.bundle_hash


def test_a_blank_search_contract_field_is_refused(spec):
    with pytest.raises(BundleError, match="search contract field 'objective'"):
        dataclasses.replace(spec, search_contract=SEARCH | {"objective": " "})


def test_the_search_files_leave_every_learner_visible_file_byte_identical(spec, searchable):
    plain, _ = render_bundle(spec)
    searched, _ = render_bundle(searchable)
    visible = ["instruction.md", "environment/Dockerfile"]
    visible += sorted(p for p in plain if p.startswith("tests/"))
    assert len(visible) > 2 and all(p in searched for p in visible)
    for path in visible:
        assert searched[path].data == plain[path].data, path
        assert searched[path].mode == plain[path].mode, path
    # what differs is only what the learner never sees: the search files (and the hash line)
    extra = set(searched) - set(plain)
    assert extra == set(layout.OPTIONAL) and not any(p.startswith("tests/") for p in extra)


CPP_PROGRAM = '#include <cstdio>\nint main() { std::puts("{\\"x\\": 0.75}"); }\n'


@pytest.fixture
def cpp_spec(searchable):
    from atoll.frontiersmith.taskcode import judge_compile

    contract = dataclasses.replace(searchable.contract, language="cpp", compile=judge_compile())
    return dataclasses.replace(
        searchable, contract=contract, solution=CPP_PROGRAM, baseline=CPP_PROGRAM
    )


def test_a_cpp_bundle_has_its_programs_as_cpp_files_and_reads_back(tmp_path, cpp_spec):
    write_bundle(tmp_path / "toy", cpp_spec)
    root = tmp_path / "toy"
    tree = _tree(root)
    assert tree["solution/solution.cpp"] == tree["solution/baseline.cpp"] == 0o644
    assert "solution/solution.py" not in tree and "solution/baseline.py" not in tree
    assert "/workspace/solution.cpp" in (root / "solution" / "solve.sh").read_text()
    assert "--submission /workspace/solution.cpp" in (root / "tests" / "test.sh").read_text()
    assert "g++" in (root / "environment" / "Dockerfile").read_text()
    assert "`/workspace/solution.cpp`" in (root / "instruction.md").read_text()
    assert read_bundle(root).spec == cpp_spec


def test_a_bundle_mixing_languages_is_refused(tmp_path, cpp_spec, spec):
    write_bundle(tmp_path / "toy", cpp_spec)
    (tmp_path / "toy" / "solution" / "solution.py").write_text(spec.solution)
    with pytest.raises(BundleError, match="not part of a cpp bundle"):
        read_bundle(tmp_path / "toy")


def test_a_cpp_program_need_not_parse_as_python_but_must_not_be_empty(cpp_spec):
    with pytest.raises(BundleError, match="solution/solution.cpp is empty"):
        dataclasses.replace(cpp_spec, solution="  \n")
