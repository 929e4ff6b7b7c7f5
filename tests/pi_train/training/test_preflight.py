"""The no-spend preflight: every family's reference scores full, and a broken one stops the run.

The references run for real through the route the rewards take: the
checker on atoll's embedded SandboxFusion-compatible sandbox for `hidden`,
a shell episode (Pi's tools, the path audit, the sandbox runner, the shell
reward) for `shell`. A broken family is built in the test through the
family's own structure (its `solutions`), put in the registry the commands
read, and the command is run for real with its Tinker address pointing at a
loopback server that records every request: a refused run leaves it empty.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ci
from support.request_recorder import RequestRecorder
from typer.testing import CliRunner

from atoll.core.sandbox.fusion import EmbeddedFusionServer
from atoll.euler import writer
from atoll.pi_train.cli import train_app
from atoll.pi_train.hidden import families
from atoll.pi_train.hidden.harness import check_submission
from atoll.pi_train.shell import families as shell_families
from atoll.pi_train.shell.episode import RUNTIMES, Bounds, fusion_runner
from atoll.pi_train.shell.train import available_languages
from atoll.pi_train.training import preflight

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with EmbeddedFusionServer(workers=2) as server:
        yield server.url


def test_every_family_has_a_reference_in_every_language_the_commands_can_train() -> None:
    for name, family in families.FAMILIES.items():
        assert sorted(family.solutions) == sorted(families.LANGUAGES), name
        for language in families.LANGUAGES:
            keyword = "def solve(" if language == "python" else "function solve("
            assert keyword in family.solutions[language], (name, language)
    for name, shell_family in shell_families.FAMILIES.items():
        assert sorted(shell_family.solutions) == sorted(RUNTIMES), name
        params = shell_family.instance("train", 0).params
        for language in RUNTIMES:
            assert "PARAMS" in shell_family.solution(language, params), (name, language)


def test_every_reference_gets_the_full_reward_through_the_rewards_route(sandbox_url: str) -> None:
    hidden = preflight.check_hidden(families.LANGUAGES, sandbox_url)
    assert [(o.family, o.language) for o in hidden] == [
        (f, lang) for f in sorted(families.FAMILIES) for lang in families.LANGUAGES
    ]
    assert all(o.reward == o.full_reward == 2.0 and o.seconds > 0 for o in hidden), hidden

    # Julia, which no sandbox here runs, has its own test below.
    runner = fusion_runner(sandbox_url)
    languages, left_out = available_languages(("python", "javascript"), runner)
    assert languages == ("python", "javascript"), left_out
    shell = preflight.check_shell(languages, runner, Bounds())
    assert [(o.family, o.language) for o in shell] == [
        (f, lang) for f in sorted(shell_families.FAMILIES) for lang in languages
    ]
    assert all(o.reward == pytest.approx(1.4) and o.full for o in shell), shell
    preflight.require_full([*hidden, *shell])  # nothing to refuse


@pytest.mark.slow  # the probe of a sandbox without Julia waits for the client's retries
def test_julia_references_get_the_full_reward_where_the_sandbox_runs_julia(
    sandbox_url: str,
) -> None:
    runner = fusion_runner(sandbox_url)
    languages, left_out = available_languages(("python", "julia"), runner)
    ci.beyond_ci(
        "julia" in languages, "julia", f"the sandbox does not run Julia: {left_out.get('julia')}"
    )
    outcomes = preflight.check_shell(("julia",), runner, Bounds())
    assert all(o.full for o in outcomes), outcomes


@pytest.mark.slow
def test_the_references_agree_with_the_families_on_many_instances(sandbox_url: str) -> None:
    """A check of the families themselves: generator, checker and reference agree throughout."""
    from atoll.pi_train.euler_source import equals, final_nonempty_line

    runner = fusion_runner(sandbox_url)
    for split in ("train", "eval"):
        for index in range(6):
            for name, family in families.FAMILIES.items():
                instance = family.instance(split, index)
                for language in families.LANGUAGES:
                    result = check_submission(
                        family.solutions[language], language, instance, sandbox_url
                    )
                    assert result.failure is None, (name, language, split, index, result)
            for name, shell_family in shell_families.FAMILIES.items():
                shell_instance = shell_family.instance(split, index)
                for language in ("python", "javascript"):
                    runtime = RUNTIMES[language]
                    program = shell_family.solution(language, shell_instance.params).encode()
                    ran = runner(runtime, {**shell_instance.files, runtime.program: program}, 6.0)
                    printed = final_nonempty_line(ran.stdout)
                    assert ran.exit_code == 0, (name, language, split, index, ran)
                    assert equals(printed, str(shell_instance.answer)), (name, language, index)


# --- a broken reference stops the command before any Tinker request --------------------------

# Off by one: the sum of the multiples up to `limit` inclusive, not below it.
_INCLUSIVE_MULTIPLES = (
    families.FAMILIES["multiples"]
    .solutions["python"]
    .replace("(limit - 1) // step", "limit // step")
)
# Numbers its lines from one more than the question says.
_SHIFTED_CHECKSUM = (
    shell_families.FAMILIES["weighted-checksum"]
    .solutions["javascript"]
    .replace("BigInt(PARAMS.start + i)", "BigInt(PARAMS.start + i + 1)")
)


def _refused(
    monkeypatch: pytest.MonkeyPatch, recorder: RequestRecorder, args: list[str], status: int = 2
) -> list[str]:
    """Run `atoll pi train ARGS` in this process; its output lines (it must exit `status`)."""
    monkeypatch.setenv("TINKER_API_KEY", "tml-preflight")
    monkeypatch.setenv("TINKER_BASE_URL", recorder.url)
    done = CliRunner().invoke(train_app, [*args, "--base-url", recorder.url])
    assert done.exit_code == status, done.output
    return done.output.strip().splitlines()


def test_hidden_with_a_broken_reference_is_refused_before_any_tinker_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = dataclasses.replace(
        families.FAMILIES["multiples"],
        solutions={**families.FAMILIES["multiples"].solutions, "python": _INCLUSIVE_MULTIPLES},
    )
    monkeypatch.setitem(families.FAMILIES, "multiples", broken)
    out = tmp_path / "run"
    with RequestRecorder() as tinker:
        lines = _refused(
            monkeypatch, tinker, ["hidden", "--base-model", "tiny", "--iterations", "1",
                                  "--out", str(out)],
        )  # fmt: skip
        assert tinker.requests == []
    assert len(lines) == 1, lines
    assert "preflight: the reference solution of family multiples in python" in lines[0]
    assert "refused before any Tinker call" in lines[0] and "hidden cases passed" in lines[0]
    # Nothing written but the writer lock's own file: no manifest, no record, no trainer.
    assert writer.is_empty(out), sorted(p.name for p in out.iterdir())


def test_shell_with_a_broken_reference_is_refused_before_any_tinker_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    family = shell_families.FAMILIES["weighted-checksum"]
    broken = dataclasses.replace(
        family, solutions={**family.solutions, "javascript": _SHIFTED_CHECKSUM}
    )
    monkeypatch.setitem(shell_families.FAMILIES, "weighted-checksum", broken)
    out = tmp_path / "run"
    with RequestRecorder() as tinker:
        lines = _refused(
            monkeypatch, tinker, ["shell", "--base-model", "tiny", "--iterations", "1",
                                  "--languages", "python,javascript", "--out", str(out)],
        )  # fmt: skip
        assert tinker.requests == []
    assert len(lines) == 1, lines
    named = "preflight: the reference solution of family weighted-checksum in javascript"
    assert named in lines[0]
    assert "it missed exact_output, answer" in lines[0]
    assert writer.is_empty(out), sorted(p.name for p in out.iterdir())


def test_a_family_without_a_reference_in_a_language_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    family = families.FAMILIES["recurrence"]
    only_python = dataclasses.replace(family, solutions={"python": family.solutions["python"]})
    monkeypatch.setitem(families.FAMILIES, "recurrence", only_python)
    with RequestRecorder() as tinker:
        lines = _refused(
            monkeypatch, tinker, ["hidden", "--base-model", "tiny", "--iterations", "1",
                                  "--out", str(tmp_path / "run")],
        )  # fmt: skip
        assert tinker.requests == []
    assert lines == [
        "error: preflight: family recurrence has no reference solution in javascript; the run "
        "is refused before any Tinker call (add one, or train without that language)"
    ]


@pytest.mark.slow  # the sandbox client retries each failed request before it gives up
def test_a_sandbox_that_cannot_run_a_reference_is_an_error_not_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    with RequestRecorder() as sandbox, RequestRecorder() as tinker:
        args = ["hidden", "--base-model", "tiny", "--iterations", "1", "--out", str(out),
                "--sandbox-url", sandbox.url]  # fmt: skip
        lines = _refused(monkeypatch, tinker, args, status=1)
        assert sandbox.requests and all(r == ("POST", "/run_code") for r in sandbox.requests)
        assert tinker.requests == []
    assert lines == [
        "error: preflight: the sandbox could not run its check for the reference solution of "
        "family multiples in python (an infrastructure failure, not a score); nothing was sent "
        "to Tinker"
    ]
    assert writer.is_empty(out), sorted(p.name for p in out.iterdir())


def test_the_record_is_written_atomically_with_every_outcome(tmp_path: Path) -> None:
    outcomes = [
        preflight.ReferenceOutcome("multiples", "python", "train/0", 2.0, 2.0, 0.05, ""),
        preflight.ReferenceOutcome("recurrence", "python", "train/0", 2.0, 2.0, 0.04, ""),
    ]
    said: list[str] = []
    preflight.record(tmp_path, "atoll pi train hidden", "embedded", outcomes, said.append)
    written = json.loads((tmp_path / preflight.RECORD).read_text())
    assert written["passed"] is True and written["sandbox"] == "embedded"
    assert [(r["family"], r["reward"], r["full"]) for r in written["references"]] == [
        ("multiples", 2.0, True),
        ("recurrence", 2.0, True),
    ]
    assert said == [
        f"preflight: 2 reference solutions (2 families x python) got the full reward through "
        f"the sandbox in 0.1 s ({tmp_path / preflight.RECORD})"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [preflight.RECORD]
