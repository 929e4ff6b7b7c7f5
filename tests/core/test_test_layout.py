"""The test tree's own rules: module names are unique across folders, and no test imports a conftest.

Test folders have no `__init__.py`, so pytest imports each test module by its
bare name; two folders holding `test_cli.py` break the collection of the
whole suite, while each folder alone still passes. This catches it there too.
Likewise every folder's conftest is the module `conftest`: which one a test
gets from `from conftest import` depends on which folders the run collects,
so shared helpers live in tests/support.
"""

from __future__ import annotations

import re
from collections import defaultdict


def test_test_module_names_are_unique_across_folders(repo):
    seen: dict[str, list[str]] = defaultdict(list)
    for path in (repo / "tests").rglob("*.py"):
        if path.name not in ("conftest.py", "__init__.py"):
            seen[path.name].append(str(path.parent.relative_to(repo)))
    clashes = {name: folders for name, folders in seen.items() if len(folders) > 1}
    assert clashes == {}, f"rename one of each: {clashes}"


def test_no_test_imports_a_conftest(repo):
    importing = [
        str(path.relative_to(repo))
        for path in (repo / "tests").rglob("*.py")
        if re.search(r"^\s*(from conftest import|import conftest\b)", path.read_text("utf-8"), re.M)
    ]
    assert importing == [], f"move what they import to tests/support: {importing}"
