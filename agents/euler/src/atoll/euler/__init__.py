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
    LANGUAGES                                 # the runtimes a problem is attempted in

Importing it loads only the standard library and atoll.core; each name is
imported on first use.
"""

from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.euler.answers import normalize
    from atoll.euler.importer import ImportError_ as ImportFailed
    from atoll.euler.importer import read_zip
    from atoll.euler.runtimes import LANGUAGES
    from atoll.euler.sample import catalog as sample_catalog
    from atoll.euler.store import Catalog, Problem, ProblemEntry, Store, StoreError
    from atoll.euler.store import write as write_store

# Imported on first use: every `atoll` call loads this package (its hook module is in it).
__getattr__ = exports(
    __name__,
    {
        "normalize": "atoll.euler.answers",
        "ImportFailed": "atoll.euler.importer:ImportError_",
        "read_zip": "atoll.euler.importer",
        "LANGUAGES": "atoll.euler.runtimes",
        "sample_catalog": "atoll.euler.sample:catalog",
        "Catalog": "atoll.euler.store",
        "Problem": "atoll.euler.store",
        "ProblemEntry": "atoll.euler.store",
        "Store": "atoll.euler.store",
        "StoreError": "atoll.euler.store",
        "write_store": "atoll.euler.store:write",
    },
)

__all__ = [
    "LANGUAGES",
    "Catalog",
    "ImportFailed",
    "Problem",
    "ProblemEntry",
    "Store",
    "StoreError",
    "normalize",
    "read_zip",
    "sample_catalog",
    "write_store",
]
