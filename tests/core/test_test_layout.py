"""The test tree's own rule: module names are unique across folders.

Test folders have no `__init__.py`, so pytest imports each test module by its
bare name; two folders holding `test_cli.py` break the collection of the
whole suite, while each folder alone still passes. This catches it there too.
"""

from __future__ import annotations

from collections import defaultdict


def test_test_module_names_are_unique_across_folders(repo):
    seen: dict[str, list[str]] = defaultdict(list)
    for path in (repo / "tests").rglob("*.py"):
        if path.name not in ("conftest.py", "__init__.py"):
            seen[path.name].append(str(path.parent.relative_to(repo)))
    clashes = {name: folders for name, folders in seen.items() if len(folders) > 1}
    assert clashes == {}, f"rename one of each: {clashes}"
