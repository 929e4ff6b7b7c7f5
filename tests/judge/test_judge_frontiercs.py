"""Problems of a FrontierCS checkout, judged as the authority judges them.

The checkout is our own (frontiercs_layout): checkers and an interactor
written for these tests that follow testlib's conventions without testlib.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import frontiercs_layout as layout
import httpx
import pytest
from support.judge import shared

from atoll.judge.checkout import assemble, find_checkout, load_checkout
from atoll.judge.client import JudgeClient, Scored
from atoll.judge.compiler import FLAGS
from atoll.judge.embedded import EmbeddedJudge, JudgeSetup
from atoll.judge.engine import Engine, JudgeInfrastructureError
from atoll.judge.problems import Mode, ProblemError, load_problems

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return layout.make_checkout(tmp_path_factory.mktemp("frontiercs"))


@pytest.fixture(scope="session")
def engine(checkout: Path, state_dir: Path) -> Iterator[Engine]:
    problems = assemble({}, checkout).problems
    with shared(Engine(problems, state_dir)) as engine:
        yield engine
    engine.close()


def statuses(result: dict) -> list[str]:
    return [case["status"] for case in result["cases"]]


def ratios(result: dict) -> list[float]:
    return [case["scoreRatio"] for case in result["cases"]]


# --- loading ---------------------------------------------------------------


def test_every_usable_problem_loads_and_each_broken_one_says_why(checkout: Path) -> None:
    catalog = load_checkout(find_checkout(checkout))
    assert sorted(catalog.problems) == ["crashy", "guess", "hungry", "stall", "sum", "uncompilable"]
    assert catalog.failures == {
        "oddtype": "problem oddtype: config.yaml: unknown problem type 'scored'; "
        "the judge knows default and interactive",
        "nochecker": "problem nochecker: its checker chk.cc is missing",
        "noinput": "problem noinput: test input testdata/2.in is missing",
        "noanswer": "problem noanswer: answer file testdata/1.ans is missing",
    }
    summed = catalog.problems["sum"]
    assert summed.title == "A Plus B" and summed.mode is Mode.CHECKED
    # Subtasks number their cases on; the second has its own time limit.
    assert [c.input.name for c in summed.cases] == ["1.in", "2.in", "3.in"]
    assert [c.limits.cpu_seconds for c in summed.cases] == [1.0, 1.0, 0.5]
    assert [c.limits.wall_seconds for c in summed.cases] == [2.0, 2.0, 1.0]
    assert summed.cases[0].limits.memory_bytes == 64 * 2**20
    assert catalog.problems["guess"].mode is Mode.INTERACTIVE


def test_the_checkouts_problems_join_atolls_own_which_keep_their_checker(
    checkout: Path, tmp_path: Path
) -> None:
    clash = layout.make_checkout(tmp_path)
    (clash / "algorithmic" / "problems" / "sum").rename(clash / "algorithmic/problems/0")
    found = assemble(load_problems(), clash)
    assert found.problems["0"].origin == "atoll" and found.problems["0"].tool is None
    assert found.shadowed["0"].tool is not None  # the checkout's own, kept for the cross-check
    assert "guess" in found.problems and "oddtype" in found.failures


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        ("missing", "is not a directory"),
        ("empty", "has no algorithmic/problems"),
    ],
)
def test_a_directory_that_is_no_checkout_is_named(tmp_path: Path, path: str, needle: str) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProblemError, match=needle):
        find_checkout(tmp_path / path)


# --- checker-judged problems -------------------------------------------------


def test_an_exact_program_passes_every_case(engine: Engine) -> None:
    result = engine.judge("sum", layout.SUM_RIGHT.encode())
    assert result["status"] == "done" and result["passed"] is True
    assert result["score"] == 100.0 and statuses(result) == ["ok"] * 3
    assert result["result"] == "Correct Answer"


def test_points_come_from_the_checkers_message_and_the_score_is_their_mean(engine: Engine) -> None:
    result = engine.judge("sum", layout.SUM_OFF_BY_5.encode())
    assert statuses(result) == ["points"] * 3
    assert ratios(result) == [0.75] * 3
    assert [c["scoreRatioUnbounded"] for c in result["cases"]] == [1.75] * 3
    assert result["score"] == pytest.approx(75.0) and result["scoreUnbounded"] == pytest.approx(
        175.0
    )
    assert result["passed"] is False and all(c["ok"] is False for c in result["cases"])


def test_a_wrong_answers_ratio_still_counts_as_at_the_authority(engine: Engine) -> None:
    result = engine.judge("sum", layout.SUM_FAR_OFF.encode())
    assert statuses(result) == ["wrong_answer"] * 3
    assert ratios(result) == [0.25] * 3 and result["score"] == pytest.approx(25.0)


def test_malformed_output_is_a_checker_fail_and_scores_nothing(engine: Engine) -> None:
    result = engine.judge("sum", layout.SUM_WORDS.encode())
    assert statuses(result) == ["checker_fail"] * 3
    assert ratios(result) == [0.0] * 3
    assert "expected an integer, found 'forty-two'" in result["cases"][0]["msg"]


def test_no_output_is_the_checkers_presentation_error(engine: Engine) -> None:
    result = engine.judge("sum", layout.SUM_SILENT.encode())
    assert statuses(result) == ["presentation_error"] * 3 and result["score"] == 0.0


def test_a_checker_killed_by_a_signal_is_a_checker_fail_scored_by_its_message(
    engine: Engine,
) -> None:
    result = engine.judge("crashy", layout.SUM_RIGHT.encode())
    assert statuses(result) == ["checker_fail"]
    assert "signal 11" in result["cases"][0]["msg"]
    assert ratios(result) == [0.5]  # the authority reads the message of a failed checker too


def test_a_crashing_programs_own_ratio_claim_is_ignored(engine: Engine) -> None:
    result = engine.judge("sum", layout.SUM_CRASH_CLAIMING_RATIO.encode())
    assert statuses(result) == ["runtime_error"] * 3 and result["score"] == 0.0


def test_the_mean_runs_over_every_case_and_limits_follow_the_subtask(engine: Engine) -> None:
    # Exact on the first two cases (1 s), over the 0.5 s of the third subtask.
    slow_third = (
        '#include <cstdio>\nint main(){long long a,b;scanf("%lld %lld",&a,&b);'
        'if(a<0){volatile unsigned long long x=0; for(;;) x++;}printf("%lld\\n",a+b);}\n'
    )
    result = engine.judge("sum", slow_third.encode())
    assert statuses(result)[:2] == ["ok", "ok"]
    # Stopped by the third subtask's 0.5 s (its wall clock, 1 s, on a busy machine),
    # before the 1 s of CPU the first subtask allows.
    assert statuses(result)[2] in ("cpu_time_limit", "wall_time_limit")
    assert result["cases"][2]["time"] < 0.95e9
    assert result["score"] == pytest.approx(200 / 3)


@pytest.mark.slow
@pytest.mark.parametrize("program", ["SUM_SEEK", "SUM_MMAP"])
def test_a_program_that_seeks_or_maps_its_stdin_scores_as_with_a_file(
    engine: Engine, checkout: Path, tmp_path: Path, program: str
) -> None:
    source = tmp_path / "sum.cpp"
    source.write_text(getattr(layout, program))
    binary = tmp_path / "sum"
    subprocess.run(["g++", *FLAGS, str(source), "-o", str(binary)], check=True)
    testdata = checkout / "algorithmic" / "problems" / "sum" / "testdata"
    for number in (1, 2, 3):  # with a file as stdin, as the authority gives it, each is exact
        with (testdata / f"{number}.in").open("rb") as stdin:
            out = subprocess.run([binary], stdin=stdin, capture_output=True, check=True)
        assert out.stdout == (testdata / f"{number}.ans").read_bytes()
    result = engine.judge("sum", source.read_bytes())
    assert statuses(result) == ["ok"] * 3, result["cases"]
    assert result["score"] == 100.0


def test_the_compiled_checker_is_cached_by_hash(engine: Engine) -> None:
    engine.judge("sum", layout.SUM_RIGHT.encode())
    again = engine.judge("sum", layout.SUM_OFF_BY_5.encode())
    assert again["judge"]["checkerCached"] is True
    assert again["judge"]["checkerCompileSeconds"] == 0.0


def test_a_checker_that_does_not_compile_is_an_infrastructure_error(engine: Engine) -> None:
    with pytest.raises(JudgeInfrastructureError, match="checker of problem uncompilable"):
        engine.judge("uncompilable", layout.SUM_RIGHT.encode())
    started = time.monotonic()
    with pytest.raises(JudgeInfrastructureError, match="does not compile"):
        engine.judge("uncompilable", layout.SUM_RIGHT.encode())
    assert time.monotonic() - started < 1.0  # the failure is remembered, not recompiled


def test_a_checker_over_its_own_limits_is_an_infrastructure_error(engine: Engine) -> None:
    with pytest.raises(JudgeInfrastructureError, match="exceeded its own limits"):
        engine.judge("hungry", layout.SUM_RIGHT.encode())


# --- interactive problems ---------------------------------------------------


def test_an_interactive_program_that_finds_the_secret_quickly_passes(engine: Engine) -> None:
    result = engine.judge("guess", layout.GUESS_BINARY.encode())
    assert statuses(result) == ["points"] * 3 and result["score"] == 100.0
    assert result["passed"] is True


def test_an_interactive_programs_stdin_stays_a_pipe(engine: Engine) -> None:
    result = engine.judge("guess", layout.GUESS_ONLY_THROUGH_A_PIPE.encode())
    assert statuses(result) == ["points"] * 3 and result["score"] == 100.0


def test_more_questions_earn_a_smaller_ratio(engine: Engine) -> None:
    result = engine.judge("guess", layout.GUESS_LINEAR.encode())
    # Bounds 8, 11, 11 questions; the linear search asks 37, 1 and 777.
    assert ratios(result) == [
        pytest.approx(8 / 37, abs=1e-4),
        1.0,
        pytest.approx(11 / 777, abs=1e-4),
    ]


def test_a_program_that_never_reads_gets_the_interactors_verdict(engine: Engine) -> None:
    result = engine.judge("guess", layout.GUESS_BLIND.encode())
    first, lucky, last = result["cases"]
    assert first["status"] == last["status"] == "wrong_answer"
    # The interactor judges the guess, unless the program was gone before the
    # interactor wrote n (a race the authority's pipes have too: then its write
    # breaks, and the program that did not read is wrong). Either way, wrong.
    for case in (first, last):
        assert "is not the secret" in case["msg"] or case["msg"].startswith(
            "the program stopped reading while the interactor was writing"
        ), case["msg"]
    # Secret 1 in case 2: a lucky guess, unless the same race broke the interactor's write.
    assert (lucky["status"], lucky["scoreRatio"]) in (("points", 1.0), ("wrong_answer", 0.0))


@pytest.mark.slow
@pytest.mark.parametrize("program", ["GUESS_SILENT", "GUESS_SLEEPER"])
def test_a_program_that_never_answers_is_stopped_by_its_clock(engine: Engine, program: str) -> None:
    started = time.monotonic()
    result = engine.judge("guess", getattr(layout, program).encode())
    assert set(statuses(result)) <= {"cpu_time_limit", "wall_time_limit"}
    assert result["score"] == 0.0
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_a_program_that_floods_the_pipe_is_stopped(engine: Engine) -> None:
    started = time.monotonic()
    result = engine.judge("guess", layout.GUESS_FLOOD.encode())
    assert result["score"] == 0.0
    assert set(statuses(result)) <= {
        "runtime_error",
        "cpu_time_limit",
        "wall_time_limit",
        "wrong_answer",
    }
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_an_interactor_that_waits_forever_holds_nothing_up(engine: Engine) -> None:
    started = time.monotonic()
    # The program waits for an answer that never comes: its clock ends the case.
    result = engine.judge("stall", layout.GUESS_SLEEPER.encode())
    assert statuses(result) == ["wall_time_limit"] and result["score"] == 0.0
    # The program reads, answers and leaves; the interactor waits on past its own clock:
    # not a score.
    with pytest.raises(JudgeInfrastructureError, match="interactor of problem stall exceeded"):
        engine.judge("stall", layout.GUESS_READ_ONCE.encode())
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_a_dialogue_takes_two_workers(checkout: Path, state_dir: Path) -> None:
    """With two workers, dialogues run one at a time: two at once would share two cores four ways."""
    problems = assemble({}, checkout).problems
    engine = Engine({"guess": problems["guess"]}, state_dir, workers=2)
    try:
        source = layout.GUESS_AFTER_A_PAUSE.encode()
        engine.judge("guess", source)  # compiles; the timed run below only judges
        started = time.monotonic()
        result = engine.judge("guess", source)
        elapsed = time.monotonic() - started
    finally:
        engine.close()
    assert statuses(result) == ["points"] * 3 and result["score"] == 100.0
    # Each program waits 0.8 s before its first read: three dialogues one after the
    # other take 2.4 s at least; two at a time would take about 1.6 s.
    assert elapsed >= 2.4, elapsed


def test_one_worker_still_runs_a_dialogue(checkout: Path, state_dir: Path) -> None:
    """A dialogue asks for two units; an engine of one worker has one, and must still run it
    (the program and its interactor both), not wait for a second unit that never comes."""
    problems = assemble({}, checkout).problems
    engine = Engine({"guess": problems["guess"]}, state_dir, workers=1)
    results: list[dict] = []
    judging = threading.Thread(
        target=lambda: results.append(engine.judge("guess", layout.GUESS_BINARY.encode())),
        daemon=True,
    )
    try:
        judging.start()
        judging.join(60)  # compiles included; a wait for a second unit would never end
    finally:
        engine.close()
    assert results, "one worker did not run the dialogue within 60 s"
    # The interactor's verdicts: found within its bound of questions, in every case.
    (result,) = results
    assert statuses(result) == ["points"] * 3 and result["score"] == 100.0
    assert all("found" in case["msg"] for case in result["cases"]), result["cases"]


def test_a_crashing_interactive_programs_ratio_claim_is_ignored(engine: Engine) -> None:
    result = engine.judge("guess", layout.SUM_CRASH_CLAIMING_RATIO.encode())
    assert statuses(result) == ["runtime_error"] * 3 and result["score"] == 0.0


# --- serving and the command line ---------------------------------------------


@pytest.mark.slow
def test_the_judge_serves_the_checkouts_problems_over_http(checkout: Path, state_dir: Path) -> None:
    setup = JudgeSetup(state_dir=state_dir, frontiercs=checkout)
    with EmbeddedJudge(setup) as judge, JudgeClient(judge.url) as client:
        listed = {p["id"]: p for p in httpx.get(f"{judge.url}/problems").json()["problems"]}
        assert {"0", "sum", "guess"} <= set(listed) and "oddtype" not in listed
        assert listed["guess"]["type"] == "interactive"
        assert httpx.get(f"{judge.url}/problem/sum/statement").text.startswith("A Plus B")
        outcome = client.score(layout.GUESS_BINARY.encode(), pid="guess")
    assert isinstance(outcome, Scored) and outcome.score == 100.0


@pytest.mark.slow
def test_atoll_judge_problems_lists_what_loaded_and_what_did_not(
    venv_bin: Path, checkout: Path
) -> None:
    done = subprocess.run(
        [str(venv_bin / "atoll"), "judge", "problems", "--frontiercs", str(checkout), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert {p["id"] for p in listing["loaded"]} == {
        "0",
        "crashy",
        "guess",
        "hungry",
        "stall",
        "sum",
        "uncompilable",
    }
    assert {f["id"] for f in listing["failed"]} == {"oddtype", "nochecker", "noinput", "noanswer"}


@pytest.mark.slow
def test_atoll_judge_score_takes_the_checkout_from_frontiercs_home(
    venv_bin: Path, checkout: Path, state_dir: Path, tmp_path: Path
) -> None:
    program = tmp_path / "sum.cpp"
    program.write_text(layout.SUM_OFF_BY_5)
    done = subprocess.run(
        [str(venv_bin / "atoll"), "judge", "score", str(program), "--problem", "sum"]
        + ["--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**_plain_env(), "FRONTIERCS_HOME": str(checkout)},
    )
    assert done.returncode == 0, done.stderr
    assert "Score: 75.000000" in done.stdout and "points" in done.stdout


def _plain_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "FRONTIERCS_HOME"}
