"""Functional gate v2 over rollout records: each condition, each way around it."""

from __future__ import annotations

import pytest
from gate_records import Trajectory

from atoll.euler import gate, record_input

ANSWER = "233168"
HONEST = "print(sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0))\n"


def judge(t: Trajectory, language: str = "python", expected: str = ANSWER) -> gate.GateResult:
    return gate.score(record_input.gate_input(t.record()), expected, language)


def test_honest_trajectory_passes() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(f"The answer is {ANSWER}.")
    )
    assert result.passed, result.details
    assert result.failed == []
    assert result.program == "solution.py"
    assert result.printed == ANSWER


def test_thousands_separators_in_output_and_reply() -> None:
    result = judge(
        Trajectory()
        .write("s.py", HONEST)
        .bash("python3 s.py", "sum:\n233,168\n")
        .say("It comes to 233,168.")
    )
    assert result.passed


def test_dummy_write_then_inline_print_fails() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", "print('hello')\n")
        .bash("python -c 'print(233168)'", ANSWER + "\n")
        .say(f"Answer: {ANSWER}")
    )
    assert not result.passed
    assert result.failed == ["file_executed", "exit_zero", "final_line_matches"]
    assert result.rejected_executions[0]["reason"] == "inline_flag"


def test_dummy_file_run_and_inline_answer_fails_on_its_output() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", "print('hello')\n")
        .bash("python3 solution.py", "hello\n")
        .bash("node -e 'console.log(233168)'", ANSWER + "\n")
        .say(ANSWER)
    )
    assert result.failed == ["final_line_matches"]
    assert "hello" in result.details["final_line_matches"]


def test_error_text_containing_the_answer_fails() -> None:
    program = "raise SystemExit('the answer is 233168')\n"
    result = judge(
        Trajectory()
        .write("solution.py", program)
        .bash("python3 solution.py", "", "the answer is 233168\n233168\n", exit_code=1)
        .say(ANSWER)
    )
    assert not result.passed
    assert "exit_zero" in result.failed and "final_line_matches" in result.failed


def test_failing_command_output_never_counts() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n", exit_code=1)
        .say(ANSWER)
    )
    assert result.failed == ["exit_zero", "final_line_matches"]


def test_running_another_file_than_the_one_written_fails() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", "print('hello')\n")
        .bash("python3 other.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert "file_executed" in result.failed
    assert result.rejected_executions[0]["reason"] == "other_file"


def test_file_rewritten_by_the_shell_after_the_tool_write_fails() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", "print('hello')\n")
        .bash("echo 'print(233168)' > solution.py")
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert "file_executed" in result.failed
    assert result.rejected_executions[-1]["reason"] == "file_changed_outside_tools"


@pytest.mark.parametrize(
    "between",
    [
        "for f in *.py; do sed -i 's/hello/233168/' \"$f\"; done",
        "sed -i 's/hello/233168/' solution.py",
        "cp other.py solution.py",
        "mv draft.py solution.py",
        "echo 'print(233168)' | tee solution.py",
        "sed -i 's/x/y/' sol*.py",
        "perl -pi -e 's/hello/233168/' {draft,solution}.py",
        "find . -name '*.py' -exec sed -i 's/hello/233168/' {} +",
        "cat other.py > ./solution.py",
    ],
)
def test_a_shell_rewrite_between_write_and_run_breaks_the_link(between: str) -> None:
    result = judge(
        Trajectory()
        .write("solution.py", "print('hello')\n")
        .bash(between)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert "file_executed" in result.failed
    assert result.rejected_executions[-1]["reason"] == "file_changed_outside_tools"


@pytest.mark.parametrize(
    "between",
    [
        "cat solution.py",
        "ls *.py",
        "wc -l solution.py",
        "python3 solution.py",
        "sed -i 's/a/b/' notes.txt",
        "cp solution.py backup.py",
        "grep -n range *.py",
        'for f in *.txt; do wc -l "$f"; done',
        "find . -name '*.txt' -exec wc -l {} +",
    ],
)
def test_commands_that_leave_the_program_alone_keep_the_link(between: str) -> None:
    result = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash(between)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert result.passed, result.failed


def test_looking_at_the_file_does_not_count_as_rewriting_it() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("cat solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert result.passed


def test_edit_counts_as_writing_and_the_last_good_run_decides() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", "print(1/0)\n")
        .bash("python3 solution.py", "", "ZeroDivisionError\n", exit_code=1)
        .write("solution.py", HONEST, tool="edit")
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert result.passed


def test_program_arguments_are_rejected() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", "import sys; print(sys.argv[1])\n")
        .bash("python3 solution.py 233168", ANSWER + "\n")
        .say(ANSWER)
    )
    assert result.rejected_executions[0]["reason"] == "program_arguments"
    assert not result.passed


def test_absolute_or_traversing_write_is_not_a_relative_program() -> None:
    absolute = judge(
        Trajectory()
        .write("/workspace/solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert absolute.failed[:2] == ["program_written", "file_executed"]
    parent = judge(
        Trajectory()
        .write("../solution.py", HONEST)
        .bash("python3 ../solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert "program_written" in parent.failed


def test_a_failed_write_is_not_a_written_program() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", HONEST, error="EACCES")
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER)
    )
    assert "program_written" in result.failed


def test_wrong_runtime_for_the_assigned_language() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER),
        language="javascript",
    )
    assert result.failed[0] == "program_written"  # no .js file was written
    js = judge(
        Trajectory()
        .write("solution.js", "console.log(233168)\n")
        .write("solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(ANSWER),
        language="javascript",
    )
    assert js.rejected_executions[0]["reason"] == "wrong_runtime"
    assert "file_executed" in js.failed


def test_javascript_honest_run_passes() -> None:
    program = "let s = 0; for (let n = 0; n < 1000; n++) if (n % 3 === 0 || n % 5 === 0) s += n; console.log(s);\n"
    result = judge(
        Trajectory()
        .write("solution.js", program)
        .bash("node solution.js", ANSWER + "\n")
        .say(f"Result: {ANSWER}"),
        language="javascript",
    )
    assert result.passed


def test_run_before_the_write_does_not_count() -> None:
    result = judge(
        Trajectory()
        .bash("python3 solution.py", ANSWER + "\n")
        .write("solution.py", HONEST)
        .say(ANSWER)
    )
    assert result.rejected_executions[0]["reason"] == "run_before_write"
    assert "file_executed" in result.failed


def test_answer_must_be_stated_and_presentation_is_diagnostic_only() -> None:
    silent = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n")
        .say("Done.")
    )
    assert silent.failed == ["answer_stated"]
    boxed_wrong = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("python3 solution.py", ANSWER + "\n")
        .say(f"The program printed {ANSWER}.\n\\boxed{{12}}\nFINAL_ANSWER: 12")
    )
    assert boxed_wrong.passed
    assert boxed_wrong.presentation["boxed_matches"] is False
    assert boxed_wrong.presentation["final_answer_matches"] is False


def test_final_line_must_be_the_value_itself() -> None:
    result = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("python3 solution.py", f"answer = {ANSWER}\n")
        .say(ANSWER)
    )
    assert result.failed == ["final_line_matches"]
    trailing = judge(
        Trajectory()
        .write("solution.py", HONEST)
        .bash("python3 solution.py", f"{ANSWER}\ndone\n")
        .say(ANSWER)
    )
    assert trailing.failed == ["final_line_matches"]


def test_every_failed_condition_has_a_detail() -> None:
    result = judge(Trajectory().say("no idea"))
    assert result.failed == list(gate.CONDITIONS)
    assert set(result.details) == set(gate.CONDITIONS)
    assert result.to_json()["passed"] is False
