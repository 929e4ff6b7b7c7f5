"""The two summary_only prompts: required blocks, and no source code in the guidance prompt."""

from __future__ import annotations

import re

from guidance_builders import valid

from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.entries import Entry, Status, Verification
from atoll.guidance_ttt.parsing import extract_program, parse_guidance
from atoll.guidance_ttt.prompts import (
    CODE_OMITTED,
    executor_prompt,
    guidance_prompt,
    guidance_request,
    score_lines,
)

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
    assert MARKER not in prompt
    assert "```" not in prompt
    assert "#include" not in prompt


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
    prompt = guidance_prompt(task, parent)
    assert "Greedy packer." in prompt
    assert CODE_OMITTED in prompt
    assert "```" not in prompt
    assert "<solution>" not in prompt
    # The inline run of backticks is cut, the text after it is prose and may stay.
    assert prompt.count(MARKER) <= 1
    assert f"```{MARKER}" not in prompt


def test_guidance_prompt_blocks_and_rules(task: Task) -> None:
    prompt = guidance_prompt(task, _parent())
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
    assert "exactly one <guidance>...</guidance> block" in rules
    assert prompt.index("<problem>") < prompt.index("<selected_summary>") < prompt.index("## Rules")


def test_executor_prompt_carries_full_code_and_output_shape(task: Task) -> None:
    prompt = executor_prompt(task, _parent(), "  Place long pieces along the border first.  ")
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
    tail = prompt.split("Answer with exactly two top-level blocks", 1)[1]
    assert tail.index("<solution>") < tail.index("</solution>") < tail.index("<summary>")
    order = [
        prompt.index(t) for t in ("<problem>", "<selected_parent>", "<guidance>", "Score direction")
    ]
    assert order == sorted(order)


def test_executor_prompt_fence_round_trips_through_the_parser(task: Task) -> None:
    prompt = executor_prompt(task, _parent(), "g")
    code = _block(_block(prompt, "selected_parent"), "parent_code")
    assert extract_program(code, task.contract.solution_language) == PARENT_PROGRAM


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
    body = guidance_request("hello", "Qwen/Qwen3-8B", 4096)
    assert body == {
        "model": "Qwen/Qwen3-8B",
        "messages": [{"role": "user", "content": "hello"}],
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,
        "max_completion_tokens": 4096,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": True},
    }
