"""Write the verifier and the grader into every discovery task again, after either changed.

Each discovery task carries atoll.discovery's verifier as tests/verify.py and
atoll.checker's grader as tests/grader.py, byte for byte, so that it verifies
in a bare image; tests/discovery/test_discovery_tasks.py fails while a copy
differs from its source. This rewrites the copies (atomically) and lists
those it changed.

    uv run python scripts/sync_discovery_tasks.py
"""

from __future__ import annotations

import sys

from atoll.core.durable import atomic_write_bytes
from atoll.discovery import TASKS, carried_sources, task_dir


def main() -> int:
    sources = carried_sources()
    for name in TASKS:
        tests = task_dir(name) / "tests"
        for file, data in sources.items():
            path = tests / file
            if not path.is_file() or path.read_bytes() != data:
                atomic_write_bytes(path, data)
                path.chmod(0o644)
                print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
