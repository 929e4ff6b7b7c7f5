"""The search contract of an emitted task: what a Guidance-TTT search needs to know, in words.

Every bundle carries it as `contract.json` (outside the learner's files,
covered by the bundle hash), so that `atoll run --agent guidance-ttt -p
TASK` can search the task with no hand-written file. It is written from the
task's public formulation only (objective, feasibility, score formula) and
the runtime limits the instruction publishes, never from the author's
reasoning: the search sees what the learner sees. The scorer is the bundle's
own grader (`checker`), and the score is the reward, to be maximized. A
C++ task's contract says `cpp`, so Guidance-TTT's C++ executor prompts (the
ones the polyomino task uses) apply unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping

from atoll.checker import SCORER_NAME, Limits
from atoll.core import sizes
from atoll.judge import FLAGS

SCORER = SCORER_NAME  # the scorer that grades with the bundle's own grader
LANGUAGE = "python"
LANGUAGES = ("python", "cpp")
RAW_SCORE_LABEL = "mean per-instance score"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _sentence(text: str) -> str:
    text = _one_line(text).rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


PROGRAMS = {
    "python": "one Python 3 program that uses only the standard library",
    "cpp": "one C++17 program that uses only the standard library (compiled once with "
    f"`g++ {' '.join(FLAGS)}`)",
}


def mechanism_constraint(limits: Limits, language: str = LANGUAGE) -> str:
    """The limits every proposed mechanism must live within, as the instruction publishes them."""
    return (
        f"Every mechanism must fit in {PROGRAMS[language]}, "
        "reads one JSON instance from standard input, and finishes each instance within "
        f"{limits.cpu_seconds:g} seconds of CPU time and {limits.wall_seconds:g} seconds of "
        f"wall clock, in {sizes.exact(limits.memory_bytes)} of address space, with at most "
        f"{limits.processes} processes or threads."
    )


def search_contract(
    formulation: Mapping[str, str], limits: Limits, language: str = LANGUAGE
) -> dict[str, str]:
    """contract.json's fields, from the public formulation (`objective`, `feasibility`,
    `score_formula`), the per-instance limits and the programs' language."""
    objective = (
        f"{_sentence(formulation['objective'])} The score of one instance: "
        f"{_sentence(formulation['score_formula'])} The raw score is the mean over the graded "
        "instances (an infeasible or malformed output, a crash or a limit exceeded scores 0 "
        "on its instance)."
    )
    run = {
        "python": "a complete Python 3 program, standard library only, run afresh per instance "
        "as `python3 -I solution.py`",
        "cpp": "a complete C++17 program, standard library only, compiled once with "
        f"`g++ solution.cpp {' '.join(FLAGS)}` and its binary run afresh per instance",
    }[language]
    solution = (
        f"{run} in an empty working directory, that reads one JSON object "
        "(the instance, as the problem describes it) from standard input and writes one JSON "
        "object (the output the problem describes; feasible means: "
        f"{_one_line(formulation['feasibility'])}) to standard output, exiting with status 0"
    )
    return {
        "scorer": SCORER,
        "solution_language": language,
        "mechanism_constraint": mechanism_constraint(limits, language),
        "objective": objective,
        "raw_score_label": RAW_SCORE_LABEL,
        "score_direction": "max",
        "solution_contract": solution,
    }
