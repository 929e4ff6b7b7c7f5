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


# Where a skip is the subject itself: the shared build passes on the skip its build raised.
SKIP_OWNERS = {
    "tests/support/ci.py",
    "tests/support/shared_build.py",
    "tests/core/test_shared_build.py",
}


def test_every_skip_goes_through_the_ci_helper(repo):
    """A skip in CI hides a missing install step: `support.ci` decides (need, beyond_ci, ...)."""
    bare = re.compile(r"pytest\.(skip\(|importorskip\()|pytest\.mark\.skipif|pytest\.mark\.skip\b")
    skipping = [
        f"{path.relative_to(repo)}:{number}"
        for path in sorted((repo / "tests").rglob("*.py"))
        if path.relative_to(repo).as_posix() not in SKIP_OWNERS
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if bare.search(line)
    ]
    assert skipping == [], f"use support.ci.need / beyond_ci / not_applicable: {skipping}"
