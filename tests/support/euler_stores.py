"""A real Euler store that reaches past the built-in sample's problems 1-10.

The reservation of problems 91-100 for promotion can only be exercised on a
store that holds them. This one is atoll-euler's own `write_store` of the
built-in sample, plus problems numbered as asked whose statements, resources
and answers are those of sample problem ((n - 1) mod 10) + 1 under their own
number: a store like an imported one, made offline.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from atoll.euler import Store, sample_catalog, write_store


def store_with(root: Path, extra: range | list[int], *, sample: bool = True) -> Store:
    """The sample store at `root` with the `extra` problem numbers added (only those, without
    the sample's own 1-10, when `sample` is false)."""
    catalog = sample_catalog()
    problems, answers = dict(catalog.problems), dict(catalog.answers)
    if not sample:
        catalog.problems, catalog.answers = {}, {}
    for number in extra:
        source = (number - 1) % 10 + 1
        catalog.problems[number] = replace(
            problems[source], number=number, title=f"Problem {number}"
        )
        catalog.answers[number] = answers[source]
    write_store(catalog, root)
    return Store(root)
