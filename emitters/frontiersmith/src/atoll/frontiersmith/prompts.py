"""The messages of each stage's request: what the model is told, and nothing it should not see.

Each builder returns the `messages` list of one Chat Completions request.
What a stage may see is part of the method: the filter sees only the public
formulation (never the author's reasoning), the feasibility validator only
the public instruction, the divergence review only the programs. Repairs
add the previous answer and the concrete evidence against it, so that a
repair request differs from the first one and is paid for once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from atoll.frontiersmith.seeds import Seed
from atoll.judge import FLAGS

if TYPE_CHECKING:
    from atoll.frontiersmith.lineage import Lineage

SYSTEM = (
    "You are one stage of FrontierSmith, which turns closed-ended programming problems into "
    "open-ended optimization tasks with deterministic graded rewards. Answer with exactly one "
    "JSON object that matches the response schema; put nothing outside it."
)

_TASK_SHAPE = """The task shape every formulation must fit:
- A submission is {program} that reads ONE JSON object (an instance) on stdin and
  writes ONE JSON object on stdout. It runs once per instance, under CPU, memory and wall-clock
  limits, with no network.
- Instances come from generate(seed) -> list of 8 to 16 JSON objects.
- score(instance, output) -> a float in [0, 1], computed from the instance and the output alone
  (never from a hidden optimum or a reference answer); 0 for malformed or infeasible output;
  higher is better; deterministic.
- is_feasible(instance, output) -> bool says whether the output satisfies the contract; a valid
  output that scores 0 is still feasible.
- The task's reward is the mean of the per-instance scores."""

# How each language's programs are asked for: the submission in the task shape, the programs'
# rules, and the fence the review prompts show them in. The task's own files stay Python.
PROGRAM = {"python": "one Python 3 program", "cpp": "one C++17 program (compiled with g++)"}
PROGRAM_RULES = {
    "python": "Python 3 standard library only",
    "cpp": "one complete C++17 program with a main function, standard library only (it is "
    f"compiled with `g++ {' '.join(FLAGS)}`; parse the JSON input yourself)",
}
FENCE = {"python": "python", "cpp": "cpp"}


def task_shape(language: str = "python") -> str:
    """The task shape, naming the submission's language."""
    return _TASK_SHAPE.format(program=PROGRAM[language])


TASK_SHAPE = task_shape("python")

MUTATION_AXES = {
    "objective": "change what is optimized, so that no known exact algorithm reaches the best "
    "score on every instance within the limits",
    "output_constraints": "restrict which outputs are admissible, so that producing a good "
    "feasible output becomes a search problem",
    "input_constraints": "generalize the inputs (weights, sizes, extra dimensions) beyond what "
    "the original exact method handles",
    # asked of a task accepted in an earlier round (`--rounds`), never of a closed seed problem
    "harden": "keep the task's story, its input and output contract and its kind of score, and "
    "make a high score harder to reach: a tighter bound (a stricter limit or constraint) or a "
    "larger instance family (larger or more varied instances, still within the limits)",
}

STRATEGY_HINTS = (
    "a constructive heuristic: build one good solution greedily from problem structure",
    "bounded local improvement: start from a simple solution and improve it with local moves "
    "until a time budget well inside the limits runs out",
    "a global or multistart search: explore many starting points or a population, keeping the "
    "best, within a time budget well inside the limits",
)

PUBLIC_FIELDS = ("title", "instruction", "objective", "feasibility", "score_formula")


def _messages(user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def public_formulation(formulation: Mapping[str, Any]) -> str:
    """The formulation as a solver sees it: no author reasoning, no baseline plan."""
    text = "\n\n".join(f"## {field}\n{formulation[field]}" for field in PUBLIC_FIELDS)
    if "example_instance" in formulation:
        text += (
            f"\n\n## worked example\ninstance: {formulation['example_instance']}\n"
            f"a feasible output: {formulation['example_output']}\n"
            f"its score: {formulation['example_score']!r}"
        )
    return text


def mutate(
    seed: Seed,
    axis: str,
    findings: Sequence[str],
    attempt: int,
    language: str = "python",
    lineage: Lineage | None = None,
) -> list[dict[str, str]]:
    """A mutate request: a round-1 seed is a closed problem to change; a later round's seed
    (`lineage.derived`) is the public statement of a task an earlier round accepted."""
    if lineage is not None and lineage.derived:
        text = [
            f"Seed problem {seed.id} (family {seed.family}): {seed.title}\n\nThis seed is the "
            f"public statement of task {lineage.parent_task}, an open-ended optimization task "
            f"accepted in round {lineage.round - 1}:\n\n{seed.problem}",
            _derived_axis(axis),
        ]
    else:
        text = [
            f"Seed problem {seed.id} (family {seed.family}): {seed.title}\n\n{seed.problem}",
            f"Mutate it on exactly one axis, preferably {axis}: {MUTATION_AXES[axis]}. "
            "Keep the story; make it an optimization problem with a graded score.",
        ]
    text += [
        task_shape(language),
        "Fields: title; mutation (the axis you changed); instruction (the complete public task "
        "statement: the input JSON object's fields and bounds, the output JSON object's fields, "
        "what makes an output feasible, the score formula, and one small worked example with an "
        "input, a feasible output and its score); objective; feasibility; score_formula (bounded "
        "in [0, 1], computable from the instance and output alone); example_instance, "
        "example_output, example_score (the worked example exactly: the instance and the "
        "feasible output each as one JSON object's text, and its exact score, which the task's "
        "own checker must reproduce); baseline_strategy (a simple "
        "method that always yields a feasible output); why_open_ended.",
    ]
    if findings:
        listed = "\n".join(f"- {f}" for f in findings)
        text.append(
            f"Attempt {attempt}. An independent review rejected the previous formulation:\n"
            f"{listed}\nFix every finding."
        )
    return _messages("\n\n".join(text))


def _derived_axis(axis: str) -> str:
    if axis == "harden":
        return (
            f"Harden it: {MUTATION_AXES[axis]}. Write the whole task again as a new, complete "
            "statement; mutation is harden."
        )
    return (
        f"Mutate it on exactly one axis, preferably {axis}: {MUTATION_AXES[axis]}. Keep the "
        "story and the graded score; write the whole task again as a new, complete statement."
    )


def filter_review(formulation: Mapping[str, Any], language: str = "python") -> list[dict[str, str]]:
    return _messages(
        "Review this optimization task independently. You see only its public formulation.\n\n"
        + public_formulation(formulation)
        + "\n\n"
        + task_shape(language)
        + "\n\nList as issues every way it is ambiguous (two careful readers could score the "
        "same output differently), infeasible (no feasible output exists for some instance), "
        "trivially solved (a known exact algorithm reaches the best score on every instance "
        "within the limits), or wrongly normalized (a score outside [0, 1], or one needing a "
        "hidden optimum or reference answer). approved is true exactly when issues is empty."
    )


def baseline(formulation: Mapping[str, Any], language: str = "python") -> list[dict[str, str]]:
    return _messages(
        public_formulation(formulation)
        + f"\n\n## baseline strategy\n{formulation['baseline_strategy']}\n\n"
        f"Write the simple baseline program this strategy describes: {PROGRAM_RULES[language]}"
        ", reading one JSON instance on stdin and writing one JSON output on stdout, always "
        "feasible, fast. Fields: strategy (one line), code."
    )


def solve(
    formulation: Mapping[str, Any], index: int, count: int, language: str = "python"
) -> list[dict[str, str]]:
    hint = STRATEGY_HINTS[index % len(STRATEGY_HINTS)]
    return _messages(
        public_formulation(formulation)
        + f"\n\nThis is independent solution {index + 1} of {count}; use {hint}.\n\n"
        f"Write a strong solution program: {PROGRAM_RULES[language]}, reading one JSON "
        "instance on stdin and writing one JSON output on stdout, always feasible, finishing well "
        "inside the limits. Fields: strategy (the core algorithm, one or two sentences), code."
    )


def divergence(
    programs: Sequence[Mapping[str, Any]], language: str = "python"
) -> list[dict[str, str]]:
    listed = "\n\n".join(
        f"### program {i}\nstrategy: {p['strategy']}\n```{FENCE[language]}\n{p['code']}\n```"
        for i, p in enumerate(programs)
    )
    return _messages(
        "Compare the core algorithms of these independent programs for one task, pair by pair. "
        "Two programs are distinct when their core algorithms differ (construction vs local "
        "search vs global search, different neighbourhoods or decompositions), not when they "
        "differ only in parameters, constants or style.\n\n"
        + listed
        + "\n\nFields: distinct_pairs (every pair [i, j] of program indices, i < j, whose core "
        "algorithms are distinct), rationale."
    )


GENERATOR_RULES = (
    "Write generator.py defining generate(seed: int) -> list[dict]: between 8 and 16 instances, "
    "each a JSON object exactly as the instruction describes, drawn from a local "
    "random.Random(seed) (never the global random module, the clock or the environment), so the "
    "same seed always gives the same list. Sizes must stay bounded: a simple program must handle "
    "every instance in well under a second. Standard library only; no I/O. It also defines "
    "examples() -> list of {name, instance, output, feasible, score} objects on small instances: at "
    "least one well-formed output that is feasible (feasible true, score its exact score under "
    "the score formula, or null), and one well-formed output that breaks the feasibility rules "
    "(feasible false, score 0); more may give their exact score, or score null."
)
SCORER_RULES = (
    "Write scorer.py defining score(instance: dict, output: dict) -> float in [0, 1]: exactly "
    "the score formula, computed from the instance and the output alone (never a hidden "
    "optimum), deterministic, finite. It returns 0.0 for anything malformed (not a dict, missing "
    "or mistyped fields, NaN, wrong lengths) or infeasible, and never raises. It never executes "
    "or imports anything taken from the output. Standard library only."
)
FEASIBILITY_RULES = (
    "Write feasibility.py defining is_feasible(instance: dict, output: dict) -> bool, written "
    "from the public instruction alone: True exactly when the output satisfies the output "
    "contract and the feasibility rules, even if it would score 0; False for anything malformed. "
    "It returns a real bool and never raises. Standard library only."
)


def construction(
    stage: str, formulation: Mapping[str, Any], language: str = "python"
) -> list[dict[str, str]]:
    rules = {"generator": GENERATOR_RULES, "scorer": SCORER_RULES, "feasibility": FEASIBILITY_RULES}
    return _messages(
        public_formulation(formulation)
        + "\n\n"
        + task_shape(language)
        + "\n\n"
        + rules[stage]
        + " Field: code."
    )


def cross_review(
    formulation: Mapping[str, Any], files: Mapping[str, str], language: str = "python"
) -> list[dict[str, str]]:
    listed = "\n\n".join(f"### {name}.py\n```python\n{code}\n```" for name, code in files.items())
    return _messages(
        public_formulation(formulation)
        + "\n\n"
        + task_shape(language)
        + "\n\nCheck that these three files agree with the formulation and with each other: the "
        "generator produces instances of exactly the described shape and bounds; the scorer "
        "implements the score formula, stays in [0, 1] and gives 0 to malformed or infeasible "
        "outputs; the validator accepts exactly the feasible outputs. An instance must not carry a "
        "precomputed optimum, best known value or reference answer that the scorer reads: the "
        "score comes from the instance's problem data and the output alone; name any such field "
        "as an issue of the generator and the scorer. Name the file (generator, "
        "scorer or feasibility) in each issue. approved is true exactly when issues is empty.\n\n"
        + listed
    )


def repair(
    first: list[dict[str, str]], previous_answer: str, evidence: str
) -> list[dict[str, str]]:
    """A repair request: the original request, the previous answer, and the evidence against it."""
    return [
        *first,
        {"role": "assistant", "content": previous_answer},
        {
            "role": "user",
            "content": "Your previous answer failed these checks:\n"
            + evidence
            + "\n\nAnswer again with a corrected JSON object.",
        },
    ]


def previous_code(code: str) -> str:
    return json.dumps({"code": code})
