"""Small modules, short functions: no module of src over 600 lines, no function over 100.

A module that grows past a screenful of screens holds more than one job,
and a function past 100 lines does several things one after another that
each deserve a name. The limits hold over every workspace member's src;
what is exempt is named below with the reason.
"""

from __future__ import annotations

import ast
import textwrap
import tomllib
from pathlib import Path

MODULE_LINES = 600
FUNCTION_LINES = 100

# Exempt by design (repository-relative path -> why).
EXEMPT_MODULES = {
    "verifiers/checker/src/atoll/checker/grader.py": (
        "the grader is one file by design: every FrontierSmith bundle carries it whole as "
        "tests/grader.py, standard library only, so that a task grades without atoll installed"
    ),
}


def oversized(source: str, where: str) -> dict[str, int]:
    """`where` and `where::function` (by qualified name) -> lines, for each over its limit."""
    found: dict[str, int] = {}
    lines = len(source.splitlines())
    if lines > MODULE_LINES:
        found[where] = lines

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > FUNCTION_LINES:
                        found[f"{where}::{name}"] = length
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, where), "")
    return found


def _sources(repo: Path) -> list[Path]:
    members = tomllib.loads((repo / "pyproject.toml").read_text("utf-8"))["tool"]["uv"]
    return sorted(
        path
        for member in members["workspace"]["members"]
        for path in (repo / member / "src").rglob("*.py")
    )


def test_src_modules_and_functions_stay_under_the_limits(repo: Path) -> None:
    found: dict[str, int] = {}
    for path in _sources(repo):
        relative = path.relative_to(repo).as_posix()
        found |= oversized(path.read_text("utf-8"), relative)
    over = {where: n for where, n in found.items() if where not in EXEMPT_MODULES}
    assert over == {}, (
        f"split these (modules <= {MODULE_LINES} lines, functions <= {FUNCTION_LINES}): {over}"
    )
    stale = sorted(set(EXEMPT_MODULES) - set(found))
    assert stale == [], f"no longer over the limits: remove them from EXEMPT_MODULES: {stale}"


def test_the_measure_counts_a_function_from_its_def_to_its_last_line() -> None:
    def function(name: str, lines: int, indent: str = "") -> str:
        """A decorated function `lines` long (the decorator is not counted)."""
        body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
        return textwrap.indent(f"@decorator\ndef {name}():\n{body}", indent)

    assert oversized(function("fits", FUNCTION_LINES), "m.py") == {}
    too_long = FUNCTION_LINES + 1
    assert oversized(function("long", too_long), "m.py") == {"m.py::long": too_long}
    method = "class Thing:\n" + function("act", too_long, indent="    ")
    assert oversized(method, "m.py") == {"m.py::Thing.act": too_long}
    fitting_method = "class Thing:\n" + function("act", FUNCTION_LINES, indent="    ")
    assert oversized(fitting_method, "m.py") == {}
    nested = "def outer():\n" + function("inner", too_long, indent="    ") + "    return 1\n"
    assert oversized(nested, "m.py") == {
        "m.py::outer": too_long + 3,  # its def, the inner decorator, its return
        "m.py::outer.inner": too_long,
    }


def test_the_measure_counts_a_module_by_its_lines() -> None:
    assert oversized("x = 1\n" * MODULE_LINES, "m.py") == {}
    assert oversized("x = 1\n" * (MODULE_LINES + 1), "m.py") == {"m.py": MODULE_LINES + 1}
