"""The one argv scanner finds each flag's value where Harbor's own parser (click) does."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from atoll.core import argv

RUN_FLAGS = {
    "agent_name": ("--agent", "-a"),
    "path": ("--path", "-p"),
    "jobs_dir": ("--jobs-dir", "-o"),
    "config_path": ("--config", "-c"),
    "job_name": ("--job-name",),
    "job_plugin": ("--plugin",),
}


@functools.cache
def harbor_run_command() -> Any:
    """Harbor's own `run` command, converted from Typer once (it converts all of Harbor's CLI)."""
    import typer
    from harbor.cli.main import app

    return typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]


def harbor_run_params(args: list[str]) -> dict[str, object]:
    return harbor_run_command().make_context("run", list(args), resilient_parsing=True).params


@pytest.mark.parametrize(
    "args",
    [
        ["--agent", "x.y:Z", "--path", "tasks/t", "--plugin", "one"],
        ["--agent=x.y:Z", "--path=tasks/t", "--plugin=one", "--plugin", "two"],
        ["-a", "x.y:Z", "-p", "tasks/t", "-o", "jobs", "-c", "job.yaml"],
        ["-ax.y:Z", "-ptasks/t", "-ojobs", "-cjob.yaml", "--job-name", "j"],
        ["-a", "first:A", "--agent", "second:B", "--jobs-dir=out", "--job-name=j"],
    ],
    ids=["long-space", "long-equals", "short-space", "short-attached", "repeated"],
)
def test_values_are_where_harbors_parser_finds_them(args: list[str]) -> None:
    parsed = harbor_run_params(args)
    for param, flags in RUN_FLAGS.items():
        found = argv.values(args, flags)
        expected = parsed[param]
        if isinstance(expected, (list, tuple)):
            assert found == [str(v) for v in expected], param
        elif expected is None:
            assert found == [], param
        else:
            assert found and found[-1] == str(expected), param  # the last one given wins


def test_nothing_after_the_end_of_options_is_an_option() -> None:
    args = ["-o", "jobs", "--", "-o", "elsewhere", "--agent=x"]
    assert argv.values(args, ("-o", "--jobs-dir")) == ["jobs"]
    assert argv.values(args, ("--agent", "-a")) == []


def test_occurrences_span_the_words_they_were_written_in() -> None:
    args = ["run", "--agent", "a:A", "-eE", "--verifier=v", "-t"]
    found = list(argv.occurrences(args, ("--agent", "-e", "--verifier", "-t")))
    assert [(o.flag, o.value, args[o.start : o.stop]) for o in found] == [
        ("--agent", "a:A", ["--agent", "a:A"]),
        ("-e", "E", ["-eE"]),
        ("--verifier", "v", ["--verifier=v"]),
        ("-t", None, ["-t"]),  # no value left: Harbor reports it
    ]


def test_a_longer_flag_is_not_mistaken_for_a_shorter_one() -> None:
    assert argv.values(["--agent-kwarg", "k=v", "--agentx=1"], ("--agent",)) == []
    assert argv.values(["--ak", "k=v"], ("-a",)) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "-a", "x"], True),
        (["jobs", "start"], True),
        (["job", "resume", "-p", "x"], False),
        (["view", "run"], False),
        ([], False),
    ],
)
def test_commands_are_read_from_the_leading_words(args: list[str], expected: bool) -> None:
    assert argv.starts_command(args, (("run",), ("jobs", "start"))) is expected
