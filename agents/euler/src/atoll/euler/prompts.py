"""The prompt of one attempt: the statement, the files, the contract, and an approach.

The contract is spelled out because the gate enforces it: write the program
to one relative file, run it as `RUNTIME FILE` (no inline code, no
arguments), print the answer as the last line, and state it in the final
reply. Approaches are prompt variants; each is a condition of the fan-out.
"""

from __future__ import annotations

from collections.abc import Sequence

from atoll.euler.runtimes import RUNTIMES

APPROACHES: dict[str, str] = {
    "direct": "Solve it directly.",
    "brute-force-then-optimize": (
        "First write the simplest correct brute-force program and check it on the small "
        "example the statement gives; then make it fast enough for the full question."
    ),
    "math-first": (
        "Work out the mathematics first (a closed form, or a much smaller search space), "
        "then write a program that uses it."
    ),
}
LANGUAGE_NAMES = {"python": "Python 3", "javascript": "JavaScript (Node.js)", "julia": "Julia"}


class ApproachError(ValueError):
    """An approach name that is not one of the prompt variants."""


def parse_approaches(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not names:
        raise ApproachError("no approach given; choose from " + ", ".join(APPROACHES))
    for name in names:
        if name not in APPROACHES:
            raise ApproachError(f"unknown approach {name!r}; choose from {', '.join(APPROACHES)}")
    return names


def render(
    *, heading: str, statement: str, files: Sequence[str], language: str, approach: str
) -> str:
    runtime = RUNTIMES[language]
    program = runtime.default_file
    lines = [
        "Solve the following problem by writing and running a program.",
        "",
        f"## {heading}",
        "",
        statement.strip(),
        "",
    ]
    if files:
        lines += ["The working directory holds: " + ", ".join(f"`{f}`" for f in files) + ".", ""]
    lines += [
        "## How to answer",
        "",
        f"- Write a {LANGUAGE_NAMES[language]} program to the file `{program}` in the working "
        "directory (use relative paths only).",
        f"- Run it exactly as `{runtime.command} {program}`: no inline code, no extra arguments.",
        "- The program must print the answer as the last line of its output.",
        "- When it does, state the answer in your final reply.",
        "",
        f"Approach: {APPROACHES[approach]}",
    ]
    return "\n".join(lines) + "\n"
