"""Project Euler with the Pi coding agent: import, evaluate, score, progress, report, transfer.

Raw rollout rows are the source of truth; every number a report prints is
recomputed from them. Answers live only in a store's private part (mode
0600) and never travel into a rollout's container.

The store API below is stable for other distributions (a trainer reads its
problems and answers through it):

    catalog = read_zip(Path("euler.zip"))     # or sample_catalog()
    write_store(catalog, Path("euler-store"))
    store = Store(Path("euler-store"))
    store.numbers(), store.entry(1), store.statement_text(1), store.expected(1)
    normalize(text)                           # an answer as the gate compares it
    equals(printed, expected), final_nonempty_line(output), stated_in(text, expected)
    LANGUAGES, parse_languages(text), LanguageError  # the runtimes a problem is attempted in
    parse_problems(text)                      # `--problems 1-10,12` as numbers
    load_curriculum(directory), CurriculumError
    compare_transfer(a, b), ManifestError, SUITE_NAME, SUITE_DIGEST  # the transfer evaluation

and the public sub-modules `rows` (a run's rollout rows), `stats` (the
statistics every report uses) and `writer` (the one-writer lock of a run
directory).

Importing it loads only the standard library and atoll.core; each name is
imported on first use.
"""

from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.euler.answers import equals, final_nonempty_line, normalize, stated_in
    from atoll.euler.curriculum import CurriculumError
    from atoll.euler.curriculum import load as load_curriculum
    from atoll.euler.evaluate import parse_problems
    from atoll.euler.importer import ImportError_ as ImportFailed
    from atoll.euler.importer import read_zip
    from atoll.euler.runtimes import LANGUAGES, LanguageError, parse_languages
    from atoll.euler.sample import catalog as sample_catalog
    from atoll.euler.store import Catalog, Problem, ProblemEntry, Store, StoreError
    from atoll.euler.store import write as write_store
    from atoll.euler.transfer.compare import compare as compare_transfer
    from atoll.euler.transfer.manifest import ManifestError
    from atoll.euler.transfer.suite import SUITE_DIGEST, SUITE_NAME

# Imported on first use: every `atoll` call loads this package (its hook module is in it).
__getattr__ = exports(
    __name__,
    {
        "normalize": "atoll.euler.answers",
        "equals": "atoll.euler.answers",
        "final_nonempty_line": "atoll.euler.answers",
        "stated_in": "atoll.euler.answers",
        "CurriculumError": "atoll.euler.curriculum",
        "load_curriculum": "atoll.euler.curriculum:load",
        "parse_problems": "atoll.euler.evaluate",
        "ImportFailed": "atoll.euler.importer:ImportError_",
        "read_zip": "atoll.euler.importer",
        "LANGUAGES": "atoll.euler.runtimes",
        "LanguageError": "atoll.euler.runtimes",
        "parse_languages": "atoll.euler.runtimes",
        "sample_catalog": "atoll.euler.sample:catalog",
        "Catalog": "atoll.euler.store",
        "Problem": "atoll.euler.store",
        "ProblemEntry": "atoll.euler.store",
        "Store": "atoll.euler.store",
        "StoreError": "atoll.euler.store",
        "write_store": "atoll.euler.store:write",
        "compare_transfer": "atoll.euler.transfer.compare:compare",
        "ManifestError": "atoll.euler.transfer.manifest",
        "SUITE_DIGEST": "atoll.euler.transfer.suite",
        "SUITE_NAME": "atoll.euler.transfer.suite",
    },
)

# Sub-modules other distributions may import as well (the README's "Public face").
__public_modules__ = ("rows", "stats", "writer")

__all__ = [
    "LANGUAGES",
    "SUITE_DIGEST",
    "SUITE_NAME",
    "Catalog",
    "CurriculumError",
    "ImportFailed",
    "LanguageError",
    "ManifestError",
    "Problem",
    "ProblemEntry",
    "Store",
    "StoreError",
    "compare_transfer",
    "equals",
    "final_nonempty_line",
    "load_curriculum",
    "normalize",
    "parse_languages",
    "parse_problems",
    "read_zip",
    "sample_catalog",
    "stated_in",
    "write_store",
]
