"""config.yaml read as the authority's problem manager reads it (no sandbox needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from atoll.judge.problem_config import ConfigError, answer_file, parse, seconds, size_bytes


def test_defaults_are_the_authoritys() -> None:
    config = parse("subtasks:\n  - n_cases: 2\n")
    assert config.type == "default" and config.checker == "chk.cc" and config.interactor is None
    assert [(c.input, c.output) for c in config.cases] == [("1.in", "1.ans"), ("2.in", "2.ans")]
    assert config.cpu_seconds == 1.0 and config.memory_bytes == 256 * 2**20


def test_interactive_problems_name_their_interactor() -> None:
    config = parse("type: interactive\nsubtasks:\n  - n_cases: 1\n")
    assert config.interactor == "interactor.cc"
    assert parse("type: interactive\ninteractor: i.cpp\nsubtasks: []\n").interactor == "i.cpp"


def test_time_limit_and_memory_limit_win_over_time_and_memory_at_every_level() -> None:
    config = parse(
        "time_limit: 3s\ntime: 9s\nmemory_limit: 1g\nmemory: 9m\n"
        "subtasks:\n"
        "  - n_cases: 1\n"
        "  - n_cases: 1\n    time: 250ms\n    memory: 512k\n"
        "  - n_cases: 1\n    time_limit: 2.5s\n    time: 7s\n"
    )
    assert [c.cpu_seconds for c in config.cases] == [3.0, 0.25, 2.5]
    assert [c.memory_bytes for c in config.cases] == [2**30, 512 * 2**10, 2**30]


def test_cases_are_numbered_on_across_subtasks_with_prefixes_and_suffixes() -> None:
    config = parse(
        "input_prefix: t\ninput_suffix: .txt\noutput_suffix: .out\n"
        "subtasks:\n  - n_cases: 2\n  - n_cases: 1\n"
    )
    assert [c.input for c in config.cases] == ["t1.txt", "t2.txt", "t3.txt"]
    assert [c.output for c in config.cases] == ["1.out", "2.out", "3.out"]


def test_an_explicit_case_list_with_its_own_limits() -> None:
    config = parse(
        "time: 2s\nsubtasks:\n  - time: 1s\n    cases:\n"
        "      - {input: a.in, output: a.out}\n      - {input: b.in, output: b.ans, time: 4s}\n"
    )
    assert [(c.input, c.output, c.cpu_seconds) for c in config.cases] == [
        ("a.in", "a.out", 1.0),
        ("b.in", "b.ans", 4.0),
    ]


def test_falsy_values_fall_back_as_javascripts_or_does() -> None:
    config = parse("time: 0\nchecker: ''\nsubtasks:\n  - n_cases: 1\n    time: null\n")
    assert config.cases[0].cpu_seconds == 1.0 and config.checker == "chk.cc"


def test_keys_the_authority_ignores_are_ignored_and_a_bom_is_skipped() -> None:
    config = parse(
        "\ufefftype: default\ncheker_type: testlib\nfilename: std.cc\n"
        "subtasks:\n  - score: 100\n    n_cases: 1\n"
    )
    assert len(config.cases) == 1


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("type: scored\nsubtasks: []\n", "unknown problem type 'scored'"),
        ("type: leetcode\nsubtasks: []\n", "not supported"),
        ("time: 1s\n", "must define subtasks"),
        ("subtasks:\n  - score: 100\n", "either 'n_cases' or 'cases'"),
        ("subtasks:\n  - n_cases: two\n", "whole number"),
        ("time: 2\nsubtasks: []\n", "bare number"),
        ("memory: 256\nsubtasks: []\n", "bare number"),
        ("time: fast\nsubtasks: []\n", "not a time limit"),
        ("memory: 256mb\nsubtasks: []\n", "not a memory limit"),
        ("time: 1s\ntime: 2s\nsubtasks: []\n", "duplicated mapping key 'time'"),
        ("- just\n- a list\n", "must be a mapping"),
        ("subtasks: [\n", "not valid YAML"),
    ],
)
def test_configs_the_authority_would_refuse_are_one_clear_error(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2s", 2.0), ("500ms", 0.5), ("2.5S", 2.5), ("1.5.2s", 1.5), ("10 s", 10.0)],
)
def test_durations_parse_as_the_authoritys_to_ns(value: str, expected: float) -> None:
    assert seconds(value, "time") == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("256m", 256 * 2**20), ("1G", 2**30), ("512k", 512 * 2**10), ("1024", 1024)],
)
def test_sizes_parse_as_the_authoritys_to_bytes(value: str, expected: int) -> None:
    assert size_bytes(value, "memory") == expected


def test_the_answer_of_an_out_output_is_its_ans_file_first(tmp_path: Path) -> None:
    (tmp_path / "1.out").write_text("x")
    assert answer_file(tmp_path, "1.out") == tmp_path / "1.out"
    (tmp_path / "1.ans").write_text("y")
    assert answer_file(tmp_path, "1.out") == tmp_path / "1.ans"
    assert answer_file(tmp_path, "2.ans") is None
