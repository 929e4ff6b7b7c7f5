"""The built-in sample: problems 1-10 in our own words, so everything runs with no download.

The mathematics is that of Project Euler's first ten problems; the
statements are written for atoll (not Project Euler's text), and problem 8
uses a digit string of our own (the first 1000 digits of the square root of
two, shipped as the resource `digits.txt`), so its answer is not Project
Euler's. Answers are computed by `reference` at import and written only into
the store's private part.
"""

from __future__ import annotations

import hashlib
from importlib import resources

from atoll.core.durable import canonical_json
from atoll.euler import htmltext
from atoll.euler.sample import reference
from atoll.euler.store import Catalog, Problem

# sha256 of the canonical JSON {"1": answer, ..., "10": answer}: all ten together, so the
# digest pins the reference solutions without giving any single answer away.
ANSWERS_DIGEST = "4e81c50760d7afd9c43f43a0cc20a1fda537e226441857d77e7d562a8246f7f8"
NUMBERS = tuple(range(1, 11))


class SampleError(RuntimeError):
    """The shipped sample does not reproduce its pinned answers (a damaged install)."""


def answers() -> dict[int, str]:
    computed = {n: str(reference.SOLUTIONS[n]()) for n in NUMBERS}
    digest = hashlib.sha256(canonical_json({str(n): a for n, a in computed.items()})).hexdigest()
    if digest != ANSWERS_DIGEST:
        raise SampleError(
            f"the built-in sample's reference solutions give answers with digest {digest}, "
            f"not the pinned {ANSWERS_DIGEST}: the installation is damaged"
        )
    return computed


def catalog() -> Catalog:
    resource_files = {"digits.txt": (reference.sqrt2_digits() + "\n").encode()}
    folder = resources.files("atoll.euler.sample").joinpath("statements")
    problems = {}
    for number in NUMBERS:
        html = folder.joinpath(f"{number:03d}.html").read_text("utf-8")
        text, linked, images, title = htmltext.extract(html, set(resource_files))
        problems[number] = Problem(
            number=number,
            title=title or f"Problem {number}",
            html=html,
            text=text,
            source_url=None,
            resources=linked,
            images=images,
        )
    return Catalog(
        problems=problems,
        answers=answers(),
        resources=resource_files,
        source={"kind": "sample", "name": "atoll built-in sample (problems 1-10)", "layout": {}},
    )
