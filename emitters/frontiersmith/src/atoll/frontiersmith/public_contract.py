"""The task's public contract is checked against its own checker, not only asked for.

Two checks join construction's: the formulation's worked example (its
instance, a feasible output and that output's score, published in the
instruction) goes into the grading contract as an example, so the grader's
self-check holds the scorer and the validator to it, and a task whose
published example disagrees with its own checker is repaired and then
refused; and the instances the generator makes must not carry a
precomputed optimum (or best value, or reference answer) that the scorer
reads, since the design's score is computed from the instance's problem
data and the output alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from atoll.frontiersmith.protocol import worked_example
from atoll.frontiersmith.taskcode import Finding

PUBLISHED_EXAMPLE = "published example"
# Instance fields whose name says they hold the answer: an optimum, a best or reference value.
# "reference" and "expected" alone are problem data too (a hypervolume's reference point, an
# expected demand): they count only when they name an answer, a solution, an output or a score.
_ANSWER_NAME = re.compile(
    r"(^|[_\-\s])(opt|optimum|optimal|optima|best|best_?known|answer|answers|solution|solutions|"
    r"(reference|ref|expected)[_\-\s]?(answer|solution|output|objective|score|value)|"
    r"target_?score|max_?score)([_\-\s]|$)",
    re.IGNORECASE,
)
_FIELDS_SCANNED = 10_000


def published_example(formulation: Mapping[str, Any]) -> dict[str, Any]:
    """The worked example as a contract example: feasible, with its published score."""
    instance, output, score = worked_example(formulation)
    return {
        "name": PUBLISHED_EXAMPLE,
        "instance": instance,
        "output": output,
        "feasible": True,
        "score": score,
    }


def concerns_published_example(found: Finding) -> bool:
    return f"'{PUBLISHED_EXAMPLE}'" in found.detail


def blame_the_checker(found: Sequence[Finding]) -> list[Finding]:
    """The published example is the public contract: when the checker disagrees with it, the
    scorer or the validator is at fault, never the generator (whose own examples it is not)."""
    fixed = []
    for f in found:
        if concerns_published_example(f):
            files = tuple(x for x in f.files if x != "generator") or ("scorer", "feasibility")
            detail = (
                f"{f.detail} (the worked example is part of the public instruction: the "
                "task's scorer and validator must reproduce it)"
            )
            f = Finding(f.check, detail, files)
        fixed.append(f)
    return fixed


def optimum_findings(instances: Sequence[Any], scorer: str) -> list[Finding]:
    """Instance fields named like a precomputed answer that scorer.py reads by name."""
    names = sorted({name for name in _field_names(instances) if _ANSWER_NAME.search(name)})
    read = [n for n in names if f'"{n}"' in scorer or f"'{n}'" in scorer]
    if not read:
        return []
    listed = ", ".join(repr(n) for n in read)
    return [
        Finding(
            "instances carry no precomputed optimum the scorer reads",
            f"the generated instances have the field(s) {listed}, named like a precomputed "
            "optimum, best value or reference answer, and scorer.py reads them: the score must "
            "be computed from the instance's problem data and the output alone (an optimum "
            "the generator computed is a hidden reference answer); drop the field and compute "
            "the score from the problem data",
            ("generator", "scorer"),
        )
    ]


def _field_names(value: Any) -> Iterator[str]:
    """Every object key inside the instances (bounded)."""
    stack, seen = [value], 0
    while stack and seen < _FIELDS_SCANNED:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                seen += 1
                yield str(key)
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item[:1000])
