"""The two summary_only prompts: required blocks, and no source code in the guidance prompt."""

from __future__ import annotations

import re

from guidance_builders import valid

from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.prompting.answer_parsing import extract_program, parse_guidance
from atoll.guidance_ttt.prompting.prompts import (
    CODE_OMITTED,
    Prompt,
    executor_prompt,
    guidance_prompt,
    guidance_request,
    score_lines,
)
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification

MARKER = "UNIQUE_MARKER_7f3a91"
PARENT_PROGRAM = f"""#include <cstdio>
// {MARKER}: keep this comment
int main() {{ const char* s = R"(```)"; std::puts("{MARKER}"); return 0; }}
"""


def _parent(summary: str = "Greedy placement, largest pieces first, row-major scan.") -> Entry:
    return Entry(
        program=PARENT_PROGRAM,
        summary=summary,
        verification=valid(27.8105, message="accepted"),
        guidance="old guidance",
    )


def _block(prompt: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.DOTALL)
    assert match is not None, f"no <{tag}> block"
    return match.group(1)


def test_guidance_prompt_never_contains_source_code(task: Task) -> None:
    prompt = guidance_prompt(task, _parent())
    for text in (prompt.system, prompt.user):
        assert MARKER not in text
        assert "```" not in text
        assert "#include" not in text


def test_code_smuggled_through_summary_or_message_is_removed(task: Task) -> None:
    summary = (
        f"Greedy packer.\n```cpp\nint main() {{ /* {MARKER} */ }}\n```\n"
        f"<solution>{MARKER}</solution> and inline ```{MARKER}"
    )
    parent = Entry(
        program=PARENT_PROGRAM,
        summary=summary,
        verification=Verification(Status.VALID, 3.0, 0.1, f"```\n{MARKER}\n```"),
    )
    prompt = guidance_prompt(task, parent).user
    assert "Greedy packer." in prompt
    assert CODE_OMITTED in prompt
    assert "```" not in prompt
    assert "<solution>" not in prompt
    # The inline run of backticks is cut, the text after it is prose and may stay.
    assert prompt.count(MARKER) <= 1
    assert f"```{MARKER}" not in prompt


def test_guidance_prompt_blocks_and_rules(task: Task) -> None:
    prompt = guidance_prompt(task, _parent()).user
    assert _block(prompt, "problem") == task.statement
    selected = _block(prompt, "selected_summary")
    assert selected.startswith("Greedy placement, largest pieces first")
    assert "Status: valid" in selected
    assert "packing density: 27.8105" in selected
    assert "Reward: 0.278105" in selected
    assert "Message: accepted" in selected
    objective = prompt.split("## Objective", 1)[1].split("## Rules", 1)[0]
    assert task.contract.objective in objective
    assert "higher packing density is better" in objective
    rules = prompt.split("## Rules", 1)[1]
    assert "summary" in rules
    assert "strategy level" in rules and "parameter schedules" in rules
    assert task.contract.mechanism_constraint in rules
    assert "exactly one non-empty <guidance>...</guidance>" in rules
    assert prompt.index("<problem>") < prompt.index("<selected_summary>") < prompt.index("## Rules")


def test_executor_prompt_carries_full_code_and_output_shape(task: Task) -> None:
    prompt = executor_prompt(task, _parent(), "  Place long pieces along the border first.  ").user
    assert _block(prompt, "problem") == task.statement
    parent = _block(prompt, "selected_parent")
    assert "packing density: 27.8105" in parent
    code = _block(parent, "parent_code")
    # The program contains ``` itself, so the fence must be longer than any run in it.
    assert code.startswith("````cpp\n") and code.endswith("\n````")
    assert code[len("````cpp\n") : -len("\n````")] == PARENT_PROGRAM.rstrip()
    assert _block(prompt, "guidance") == "Place long pieces along the border first."
    assert "Score direction: higher packing density is better (maximize packing density)" in prompt
    assert f"Solution contract: {task.contract.solution_contract}" in prompt
    tail = prompt.split("answer with exactly two top-level blocks", 1)[1]
    assert tail.index("<solution>") < tail.index("</solution>") < tail.index("<summary>")
    order = [
        prompt.index(t) for t in ("<problem>", "<selected_parent>", "<guidance>", "Score direction")
    ]
    assert order == sorted(order)


def test_executor_prompt_fence_round_trips_through_the_parser(task: Task) -> None:
    prompt = executor_prompt(task, _parent(), "g").user
    code = _block(_block(prompt, "selected_parent"), "parent_code")
    answer = f"<solution>\n{code}\n</solution>\n<summary>s</summary>"
    assert extract_program(answer, task.contract.solution_language) == PARENT_PROGRAM


def test_guidance_prompt_instructions_match_the_parser(task: Task) -> None:
    # An answer that follows the prompt's rule literally is accepted.
    answer = "I think the border matters.\n<guidance>Fill the border first.</guidance>\n"
    assert parse_guidance(answer).guidance == "Fill the border first."


def test_score_lines_of_unscored_and_failed_parents(task: Task) -> None:
    assert score_lines(None, task.contract) == "Status: not scored yet"
    failed = Verification(Status.COMPILE_ERROR, None, 0.0, "x" * 2000)
    lines = score_lines(failed, task.contract).splitlines()
    assert lines[:3] == ["Status: compile_error", "packing density: none", "Reward: 0"]
    assert len(lines[3]) < 700 and lines[3].endswith("…")


def test_guidance_request_sampling() -> None:
    body = guidance_request(Prompt("role", "hello"), "Qwen/Qwen3-8B", 4096)
    assert body == {
        "model": "Qwen/Qwen3-8B",
        "messages": [
            {"role": "system", "content": "role"},
            {"role": "user", "content": "hello"},
        ],
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,
        "max_completion_tokens": 4096,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": True},
    }


def test_both_models_get_their_role_as_a_system_message(task: Task) -> None:
    guidance = guidance_prompt(task, _parent())
    executor = executor_prompt(task, _parent(), "g")
    assert [m["role"] for m in guidance.messages()] == ["system", "user"]
    assert [m["role"] for m in executor.messages()] == ["system", "user"]
    # The guidance model steers the search at strategy level and writes no code.
    assert "evolutionary" in guidance.system and "strategy" in guidance.system
    assert "never write code" in guidance.system
    # The executor modifies the parent per the guidance: a complete program and a summary.
    assert "parent C++ program" in executor.system and "guidance" in executor.system
    assert "complete, runnable program" in executor.system
    assert "self-contained summary" in executor.system
    assert task.statement not in guidance.system + executor.system  # roles only


def test_the_summary_contract_is_as_detailed_as_the_methods(task: Task) -> None:
    summary = _block(executor_prompt(task, _parent(), "g").user, "summary")
    for required in (
        "the algorithm it implements",
        "what changed from the parent in response to the guidance, and what was kept",
        "mechanisms the program really contains",
        "only this summary",
        "simplified, approximated or left out part of the guidance",
        "no source code",
        "no code fences",
        "no copied constants or parameter values",
        "none of these instructions",
    ):
        assert required in " ".join(summary.split()), required
