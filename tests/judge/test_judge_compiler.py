"""The compile flags are the authority engine's, read from one place by everything that names them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from atoll.core.sandbox import get_backend
from atoll.judge.compiler import FLAGS, PROGRAM, CompileCache, tool_recipe

# What the authority's engine (`gojudge.js`) runs for programs, checkers and interactors.
ENGINE_FLAGS = ("-O2", "-pipe", "-std=gnu++17")
README = Path(__file__).parents[2] / "verifiers" / "frontiercs-judge" / "README.md"


def test_every_recipe_compiles_with_the_engines_flags(tmp_path: Path) -> None:
    assert FLAGS == ENGINE_FLAGS
    assert PROGRAM.argv() == ["g++", "solution.cpp", *FLAGS, "-o", "solution"]
    for role, name in (("checker", "chk"), ("interactor", "interactor")):
        assert tool_recipe(role, tmp_path).argv() == [
            "g++",
            f"{name}.cc",
            *FLAGS,
            "-I",
            "/include",
            "-o",
            name,
        ]


def test_the_readme_names_the_flags_the_judge_uses() -> None:
    text = " ".join(README.read_text().split())
    assert f"`g++ {' '.join(FLAGS)}`" in text  # programs
    assert f"`g++ {' '.join(FLAGS)} -I <the checkout's" in text  # checkers and interactors


def _elf_headers(binary: Path) -> str:
    return subprocess.run(
        ["readelf", "--program-headers", "--sections", "--wide", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.slow
def test_a_program_is_built_as_the_authority_builds_it(tmp_path: Path) -> None:
    """Dynamically linked and not stripped, as `g++ -O2 -pipe -std=gnu++17` leaves it."""
    cache = CompileCache(tmp_path, get_backend("bwrap"))
    built = cache.compile(b'#include <cstdio>\nint main(){puts("hi");}\n')
    headers = _elf_headers(built.binary)
    assert "INTERP" in headers  # no -static: the dynamic loader is named
    assert ".symtab" in headers  # no -s: the symbol table is kept
    assert subprocess.run([built.binary], capture_output=True, check=True).stdout == b"hi\n"


@pytest.mark.slow
def test_a_fresh_build_runs_at_once_and_reaches_the_cache_whole(tmp_path: Path) -> None:
    """Its cases run it from a copy of its own while the cache makes it durable and takes it;
    the copy goes once both are done, and the next compile of the source is the cache's."""
    cache = CompileCache(tmp_path, get_backend("bwrap"))
    source = b'#include <cstdio>\nint main(){puts("fresh");}\n'
    try:
        built = cache.compile(source)
        assert not built.cached and built.binary != cache.path_for(built.key)
        assert subprocess.run([built.binary], capture_output=True).stdout == b"fresh\n"
        again = cache.compile(source)  # waits for the publication, then finds it
        assert again.cached and again.binary == cache.path_for(built.key)
        assert again.binary.read_bytes() == built.binary.read_bytes()
        assert again.binary.stat().st_mode & 0o777 == 0o755
        built.release()
    finally:
        cache.close()  # what it still had to do, done
    assert not built.binary.exists()  # the private copy is gone, the cache's stays
    assert subprocess.run([again.binary], capture_output=True).stdout == b"fresh\n"
    assert [p.name for p in tmp_path.iterdir()] == [built.key]  # no work directory left
