"""Scripted models for the explorer's run: every outcome, and markup in the guidance.

The guidance model (behind the real Reef) names shelf width factors, as in
`packers`, followed by a markup fragment that would run as script if a page
embedded it unescaped; every fifth answer has no guidance block. The
executor writes real C++ packers that the real judge scores, except that a
factor of 0 gives a program that does not compile (a judge error) and a
factor of 0.75 gives an answer with no program (a parse error).
"""

from __future__ import annotations

from typing import Any

from packers import FACTORS, MALFORMED, PackerExecutor, prompt_of
from support.openai_server import NumberedScript, Reply

# Markup a page must show as text: it ends the page's script element and starts another.
INJECTION = "</script><script>window.pwned=1</script><img src=x onerror=window.pwned=2>"


class MarkupGuidance(NumberedScript):
    """Answer n: factor FACTORS[n mod 10] (0 at n = 3, 13, ...; 0.75 at n = 6, 16, ...) and
    the injection; every fifth answer is malformed."""

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        if number % 5 == 0:
            return Reply(content=MALFORMED, completion_tokens=11)
        factor = FACTORS[number % len(FACTORS)]
        guidance = f"Use shelf width factor {factor}. {INJECTION}"
        return Reply(content=f"Thinking...\n<guidance>{guidance}</guidance>", completion_tokens=17)


class SometimesNoProgram(PackerExecutor):
    """`PackerExecutor`, but guidance naming factor 0.75 gets an answer with no program."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        if "Use shelf width factor 0.75." in prompt_of(request):
            return Reply(content="<summary>I could not write it.</summary>", completion_tokens=7)
        return super().__call__(request)
