"""No distribution imports another distribution's non-exported module or name.

A distribution's public face is its package `__init__`'s `__all__` (names,
often resolved lazily through `atoll.core.lazy.exports`) plus, for a package
that is also a library of sub-modules, the sub-modules its `__init__` lists in
`__public_modules__` (from each, the names in its `__all__`, or else the names
without a leading underscore). Every import of one atoll distribution by
another, anywhere in its sources (module level, inside functions, under
TYPE_CHECKING), must go through that face. The rule is read from the sources
(AST), so this test imports nothing it checks.

`python tests/test_public_faces.py` prints every cross-distribution import
with its verdict.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Face:
    """What one distribution's package lets others import."""

    package: str
    root: Path
    exported: frozenset[str]
    public_modules: frozenset[str]

    def module_file(self, dotted: str) -> Path | None:
        base = self.root.joinpath(*dotted.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None


@dataclass(frozen=True)
class Import:
    """One name (or module) one distribution takes from another."""

    path: Path
    line: int
    importer: str
    module: str  # atoll.X or atoll.X.sub
    name: str | None  # None for `import atoll.X.sub`

    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    def what(self) -> str:
        return self.module if self.name is None else f"{self.module}:{self.name}"


def _literal(tree: ast.Module, variable: str) -> tuple[str, ...] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == variable for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    return None


@cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@cache
def faces() -> dict[str, Face]:
    found = {}
    for init in sorted(REPO.glob("*/*/src/atoll/*/__init__.py")):
        tree = _parsed(init)
        found[init.parent.name] = Face(
            init.parent.name,
            init.parent,
            frozenset(_literal(tree, "__all__") or ()),
            frozenset(_literal(tree, "__public_modules__") or ()),
        )
    return found


def imports_in(path: Path, importer: str, tree: ast.Module) -> Iterator[Import]:
    """Every `atoll.*` import of another distribution in one source file, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("atoll.") and node.module.split(".")[1] != importer:
                for alias in node.names:
                    yield Import(path, node.lineno, importer, node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "atoll" and len(parts) > 1 and parts[1] != importer:
                    yield Import(path, node.lineno, importer, alias.name, None)


def all_imports() -> list[Import]:
    found = []
    for package, face in faces().items():
        for path in sorted(face.root.rglob("*.py")):
            found += imports_in(path, package, _parsed(path))
    return found


def verdict(found: Import) -> str | None:
    """None if `found` goes through the imported distribution's face, else why not."""
    parts = found.module.split(".")
    face = faces().get(parts[1])
    if face is None:
        return f"no distribution has the package atoll.{parts[1]}"
    sub = ".".join(parts[2:])
    if found.name is not None and f"{sub}.{found.name}".lstrip(".") in face.public_modules:
        return None  # `from atoll.core.environments import dockerfile`: a public module
    if sub and sub not in face.public_modules:
        return f"atoll.{face.package}.{sub} is not among its __public_modules__"
    if found.name is None:
        return None
    if found.name == "*":
        return "a star import takes names nobody chose to export"
    if not sub:
        if found.name in face.exported or found.name in face.public_modules:
            return None
        return f"{found.name} is not in atoll.{face.package}.__all__"
    source = face.module_file(sub)
    names = _literal(_parsed(source), "__all__") if source else None
    if names is not None:
        return None if found.name in names else f"{found.name} is not in {found.module}.__all__"
    return f"{found.name} is private to {found.module}" if found.name.startswith("_") else None


def rejected() -> list[str]:
    return [
        f"{i.where()}: {i.what()} ({why})" for i in all_imports() if (why := verdict(i)) is not None
    ]


@pytest.mark.slow  # parses every source file of the workspace
def test_no_distribution_imports_a_non_exported_module_or_name():
    found = rejected()
    assert not found, "imports around a public face:\n" + "\n".join(found)


# Everyday imports the rule must accept, one per kind of face (file, module, name).
ACCEPTED = [
    ("agents/pi-docker/src/atoll/pi/container.py", "atoll.core.sandbox", "engine_url"),
    ("agents/pi-docker/src/atoll/pi/image/__init__.py", "atoll.core.docker_engine", "image_id"),
    ("agents/guidance-ttt/src/atoll/guidance_ttt/contract.py", "atoll.judge", "SOURCE_FILES"),
    ("agents/guidance-ttt/src/atoll/guidance_ttt/services/scorer.py", "atoll.judge", "judge_url"),
    (
        "agents/guidance-ttt/src/atoll/guidance_ttt/prompting/model_answer.py",
        "atoll.core.llm",
        "answer_fields",
    ),
    ("emitters/frontiersmith/src/atoll/frontiersmith/taskcode.py", "atoll.judge", "FLAGS"),
    (
        "emitters/frontiersmith/src/atoll/frontiersmith/search.py",
        "atoll.guidance_ttt",
        "run_search",
    ),
    ("emitters/frontiersmith/src/atoll/frontiersmith/bundle/write.py", "atoll.checker", "layout"),
    (
        "emitters/frontiersmith/src/atoll/frontiersmith/bundle/write.py",
        "atoll.checker.layout",
        "LayoutError",
    ),
    ("emitters/frontiersmith/src/atoll/frontiersmith/trials.py", "atoll.checker", "read_scores"),
    ("emitters/frontiersmith/src/atoll/frontiersmith/upkeep.py", "atoll.core.ledger", "Ledger"),
    ("agents/pi-train/src/atoll/pi_train/promotion/promote.py", "atoll.euler", "writer"),
    ("agents/pi-train/src/atoll/pi_train/promotion/promote.py", "atoll.euler", "compare_transfer"),
    ("agents/pi-train/src/atoll/pi_train/promotion/promote.py", "atoll.pi.rollout", "connect"),
    ("agents/pi-train/src/atoll/pi_train/shell/episode.py", "atoll.pi", "audit_tool_calls"),
    (
        "agents/pi-train/src/atoll/pi_train/hidden/train.py",
        "atoll.core.sandbox.fusion",
        "EmbeddedFusionServer",
    ),
    ("agents/euler/src/atoll/euler/evaluate.py", "atoll.pi", "rollout"),
    (
        "verifiers/checker/src/atoll/checker/verifier_box.py",
        "atoll.core.environments.box",
        "box_spec",
    ),
    (
        "verifiers/checker/src/atoll/checker/verifier_box.py",
        "atoll.core.sandbox.userns",
        "UserNamespace",
    ),
    ("verifiers/frontiercs-judge/src/atoll/judge/leftovers.py", "atoll.core.sandbox", "cgroups"),
    ("verifiers/discovery/src/atoll/discovery/verify.py", "atoll.checker", "grader"),
    ("stack/reef-stack/src/atoll/stack/launcher.py", "atoll.core.docker_engine", "tail"),
]


@pytest.mark.slow
def test_the_tree_s_everyday_imports_are_listed_and_accepted():
    listed = {(str(i.path.relative_to(REPO)), i.module, i.name): i for i in all_imports()}
    for key in ACCEPTED:
        assert key in listed, f"not found in the sources: {key}"
        assert verdict(listed[key]) is None, (key, verdict(listed[key]))
    accepted = [i for i in listed.values() if verdict(i) is None]
    assert len(accepted) > 200  # every distribution but the host imports atoll.core's face
    assert {i.importer for i in accepted} >= {"checker", "euler", "frontiersmith", "judge", "pi"}


def _verdicts(importer: str, source: str) -> list[str | None]:
    path = faces()[importer].root / "example.py"
    return [verdict(i) for i in imports_in(path, importer, ast.parse(source))]


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("pi", "from atoll.core.sandbox import engine_url, raw_socket, get_backend"),
        ("pi", "from atoll.core.docker_engine import BASE_IMAGE, MIRROR_ENV"),
        ("judge", "from atoll.core.durable import atomic_write_text"),
        ("judge", "import atoll.core.sandbox"),
        ("judge", "import atoll.core"),
        ("checker", "from atoll.core import hookimpl, Registration"),
        ("checker", "from atoll.core import sizes, reef_env"),
        ("checker", "from atoll.core.environments import dockerfile"),
        ("judge", "from atoll.core.sandbox import owners"),
        ("frontiersmith", "from atoll.core.llm import PaidChat"),
        ("guidance_ttt", "from atoll.judge import JudgeForTrials as J"),
        ("pi_train", "from atoll.core.sandbox.fusion import require_loopback_url"),
        ("pi_train", "from atoll.euler import stats, Store"),
        ("euler", "from atoll.pi.rollout import RolloutRequest"),
        ("frontiersmith", "from atoll.checker.layout import BundleFile"),
        ("frontiersmith", "from . import bundle\nfrom .model import x"),  # its own package
        ("judge", "from atoll.judge.compiler import FLAGS"),  # its own module
    ],
)
def test_imports_through_a_face_are_accepted(importer, source):
    assert all(v is None for v in _verdicts(importer, source)), _verdicts(importer, source)


@pytest.mark.parametrize(
    ("importer", "source", "says"),
    [
        ("pi", "from atoll.core.sandbox.docker_backend import engine_url", "__public_modules__"),
        ("pi", "from atoll.core.docker_engine.base_image import image_id", "__public_modules__"),
        ("guidance_ttt", "from atoll.judge.client import SOURCE_FILES", "__public_modules__"),
        (
            "guidance_ttt",
            "def f():\n    from atoll.judge.scorer import judge_url\n",
            "__public_modules__",
        ),
        (
            "frontiersmith",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from atoll.guidance_ttt.wiring import run_search\n",
            "__public_modules__",
        ),
        ("frontiersmith", "import atoll.guidance_ttt.wiring", "__public_modules__"),
        ("pi", "from atoll.pi_train.cli import train_app", "__public_modules__"),
        ("pi_train", "from atoll.pi import audit", "not in atoll.pi.__all__"),
        ("pi_train", "from atoll.euler import curriculum", "not in atoll.euler.__all__"),
        ("judge", "from atoll.core.durable import _fsync", "private"),
        ("frontiersmith", "from atoll.core.llm import httpx", "not in atoll.core.llm.__all__"),
        ("frontiersmith", "from atoll.checker import *", "star import"),
        ("checker", "from atoll.core import cli", "not in atoll.core.__all__"),
        ("checker", "from atoll.core.environments import egress_rules", "__public_modules__"),
        ("checker", "from atoll.nowhere import x", "no distribution"),
    ],
)
def test_imports_around_a_face_are_rejected_saying_why(importer, source, says):
    found = _verdicts(importer, source)
    assert found and all(v is not None and says in v for v in found), found


def _public_modules() -> list[tuple[str, str]]:
    return [(p, m) for p, face in faces().items() for m in sorted(face.public_modules)]


@pytest.mark.parametrize(("package", "module"), _public_modules())
def test_each_public_module_exists_and_its_readme_names_it(package, module):
    face = faces()[package]
    assert face.module_file(module) is not None, f"atoll.{package}.{module} does not exist"
    readme = (face.root.parents[2] / "README.md").read_text(encoding="utf-8")
    assert f"atoll.{package}.{module}`" in readme, f"{face.root.parents[2]}/README.md"


@pytest.mark.slow
@pytest.mark.parametrize("package", sorted(faces()))
def test_each_exported_name_resolves(package):
    module = importlib.import_module(f"atoll.{package}")
    missing = [name for name in faces()[package].exported if not hasattr(module, name)]
    assert not missing, f"atoll.{package}.__all__ names what it cannot give: {missing}"


def main() -> int:
    for found in all_imports():
        why = verdict(found)
        label = "ok" if why is None else "REJECTED"
        print(f"{label:8} {found.where()}: {found.what()}" + (f" ({why})" if why else ""))
    return 1 if rejected() else 0


if __name__ == "__main__":
    sys.exit(main())
