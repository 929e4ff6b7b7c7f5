"""atoll.discovery: discovery problems with published records, as Harbor tasks, and a suite.

Five tasks (`erdos_min_overlap`, `autocorrelation_ac1`, `autocorrelation_ac2`,
`circle_packing_26`, `circle_packing_32`): each candidate is a Python program
that prints its construction, and the task's own verifier (`verify`, carried
by every task as tests/verify.py) recomputes the objective from it. The
`atoll suite` command searches several tasks in turn with `atoll run` and
tabulates the best found against the records. Importing this package loads
only atoll.core's light part; the names below (its public face) load when
first used.
"""

from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.discovery.records import Record, TaskFacts, task_facts
    from atoll.discovery.tasks import TASKS, carried_sources, task_dir
    from atoll.discovery.verify import Invalid, Verdict, evaluate

__getattr__ = exports(
    __name__,
    {
        "Invalid": "atoll.discovery.verify",
        "Record": "atoll.discovery.records",
        "TASKS": "atoll.discovery.tasks",
        "TaskFacts": "atoll.discovery.records",
        "Verdict": "atoll.discovery.verify",
        "carried_sources": "atoll.discovery.tasks",
        "evaluate": "atoll.discovery.verify",
        "task_dir": "atoll.discovery.tasks",
        "task_facts": "atoll.discovery.records",
    },
)

__all__ = [
    "TASKS",
    "Invalid",
    "Record",
    "TaskFacts",
    "Verdict",
    "carried_sources",
    "evaluate",
    "task_dir",
    "task_facts",
]
