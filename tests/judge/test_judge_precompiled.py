"""A submission's leading standard headers, precompiled once seen twice: the same binary,
the same compile errors, never a stale header, and out of the way of judging."""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from atoll.core.sandbox import CancelToken, SessionPool, get_backend
from atoll.judge.compiler import (
    COMPILE_BOX,
    COMPILE_SLOTS,
    FLAGS,
    CompileCache,
    CompileError,
    prefix_cache,
)
from atoll.judge.engine import Engine
from atoll.judge.precompiled import (
    DEPENDENCIES,
    KEEP,
    PRECOMPILED,
    SEEN_BEFORE_BUILD,
    PrefixCache,
    leading_includes,
)
from atoll.judge.problems import load_problems

PROGRAMS = Path(__file__).parent / "programs"
SHELF = (PROGRAMS / "shelf.cpp").read_bytes()


@pytest.mark.parametrize(
    ("source", "headers"),
    [
        (b"#include <cstdio>\n#include <vector>\nint main(){}\n", ("cstdio", "vector")),
        (b"#include <bits/stdc++.h>\nusing namespace std;\nint main(){}\n", ("bits/stdc++.h",)),
        (
            b"// a packer\n\n  #  include <bits/stdc++.h>  // all\r\nusing namespace std;\n",
            ("bits/stdc++.h",),
        ),
        (b"#include<vector>\n#include\t<map>\nint main(){}\n", ("vector", "map")),
        (b"\t#include <cstdio>\n    #include <cmath>\n", ("cstdio", "cmath")),
        (b"#include <cstdio>\r\n#include <vector>\r\nint main(){}\r\n", ("cstdio", "vector")),
        (b"#include <cstdio>\n// the grid\n\n#include <vector>\nint g;\n", ("cstdio", "vector")),
        (
            b"#include <ext/pb_ds/assoc_container.hpp>\n#include <sys/time.h>\n",
            ("ext/pb_ds/assoc_container.hpp", "sys/time.h"),
        ),
        (
            b"#include <unordered_map>\n#include <random>\n#include <chrono>",
            ("unordered_map", "random", "chrono"),
        ),
        (b"#include <cstdio>\nusing namespace std;\n#include <vector>\n", ("cstdio",)),
        (b'#pragma GCC optimize("O3")\n#include <cstdio>\n', ()),
        (b"#define N 5\n#include <cstdio>\n", ()),
        (b'#include "local.h"\n#include <cstdio>\n', ()),
        (b"#include <cstdio>\n// continued \\\n#include <vector>\n", ("cstdio",)),
        (b"#include <cstdio>\n/* a block\n#include <vector> */\n", ("cstdio",)),
        (b"#include <cstdio>\r#include <vector>\n", ()),
        (b"#include <cstdio> /* why */\n", ()),
        (b"#include <../../etc/passwd>\n", ()),
        (b"\xef\xbb\xbf#include <cstdio>\n", ()),
        (b"int main(){}\n", ()),
    ],
)
def test_only_the_lines_every_reading_agrees_are_includes_count(
    source: bytes, headers: tuple[str, ...]
) -> None:
    """How programs start (the first nine: all their includes count), and what ends the prefix."""
    assert leading_includes(source) == headers


@pytest.fixture
def prefixes(tmp_path: Path) -> Iterator[PrefixCache]:
    sessions = SessionPool(get_backend("bwrap"), COMPILE_BOX, COMPILE_SLOTS)
    try:
        yield prefix_cache(tmp_path / "prefixes", sessions)
    finally:
        sessions.close()


def _precompile(prefixes: PrefixCache, source: bytes) -> None:
    """Have `source`'s leading includes precompiled, as a judge does once idle."""
    for _ in range(SEEN_BEFORE_BUILD):
        assert prefixes.usable(source) is None
    with CancelToken() as token:
        prefixes.run(token)
    assert prefixes.usable(source) is not None


@pytest.fixture(autouse=True)
def _compiler_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="atoll.judge.compiler")


def _compiled_again(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The compiles that failed with precompiled headers and were repeated without them."""
    return [r for r in caplog.records if "without precompiled" in r.getMessage()]


def _plain_gxx(source: bytes, work: Path) -> bytes:
    """The binary `g++ FLAGS` makes of `source` outside any sandbox, as the judge names it."""
    work.mkdir()
    (work / "solution.cpp").write_bytes(source)
    subprocess.run(["g++", "solution.cpp", *FLAGS, "-o", "solution"], cwd=work, check=True)
    return (work / "solution").read_bytes()


def test_a_program_compiled_with_its_precompiled_headers_is_the_plain_binary(
    tmp_path: Path, prefixes: PrefixCache, caplog: pytest.LogCaptureFixture
) -> None:
    _precompile(prefixes, SHELF)
    cache = CompileCache(
        tmp_path / "binaries", prefixes.sessions.backend, prefixes.sessions, prefixes
    )
    try:
        built = cache.compile(SHELF)
        assert built.binary.read_bytes() == _plain_gxx(SHELF, tmp_path / "plain")
        assert not _compiled_again(caplog)
        built.release()
    finally:
        cache.close()
    assert (prefixes.directory / prefixes.key(leading_includes(SHELF)) / PRECOMPILED).is_file()


@pytest.mark.slow
def test_every_test_program_builds_the_same_with_its_headers_precompiled(
    tmp_path: Path, prefixes: PrefixCache, caplog: pytest.LogCaptureFixture
) -> None:
    """Every program of the judge's tests that starts with includes, `<bits/stdc++.h>` too."""
    stdcpp = SHELF.replace(b"#include <algorithm>", b"#include <bits/stdc++.h>")
    sources = {p.stem: p.read_bytes() for p in sorted(PROGRAMS.glob("*.cpp"))}
    sources["shelf_stdc++"] = stdcpp
    plain = CompileCache(tmp_path / "plain", prefixes.sessions.backend, prefixes.sessions)
    cache = CompileCache(tmp_path / "with", prefixes.sessions.backend, prefixes.sessions, prefixes)
    try:
        compared = 0
        for name, source in sources.items():
            if not leading_includes(source):
                continue
            if prefixes.usable(source) is None:  # not the headers of a program before
                _precompile(prefixes, source)
            ours, theirs = cache.compile(source), plain.compile(source)
            assert ours.binary.read_bytes() == theirs.binary.read_bytes(), name
            compared += 1
        assert compared >= 19  # the 18 that start with includes, and bits/stdc++.h
        assert not _compiled_again(caplog)
    finally:
        cache.close()
        plain.close()


def test_a_compile_error_is_the_plain_compiles_word_for_word(
    tmp_path: Path, prefixes: PrefixCache, caplog: pytest.LogCaptureFixture
) -> None:
    """Even where g++ would name the precompiled header in it (an error in a template of a
    header: "In file included from prefix.h"), as a compile that fails is done again."""
    broken = (
        SHELF
        + b"struct Unordered {};\nvoid f() { std::vector<Unordered> v; std::sort(v.begin(), v.end()); }\n"
    )
    _precompile(prefixes, broken)
    plain = CompileCache(tmp_path / "plain", prefixes.sessions.backend, prefixes.sessions)
    cache = CompileCache(tmp_path / "with", prefixes.sessions.backend, prefixes.sessions, prefixes)
    try:
        messages = []
        for compiler in (cache, plain):
            with pytest.raises(CompileError) as failed:
                compiler.compile(broken)
            messages.append(str(failed.value))
        assert "from solution.cpp:3" in messages[0]
        assert messages[0] == messages[1]
        [again] = _compiled_again(caplog)
    finally:
        cache.close()
        plain.close()


def test_headers_changed_since_they_were_precompiled_are_not_used(prefixes: PrefixCache) -> None:
    _precompile(prefixes, SHELF)
    directory = prefixes.directory / prefixes.key(leading_includes(SHELF))
    recorded = json.loads((directory / DEPENDENCIES).read_text())
    assert any(path.endswith("/vector") for path, _, _ in recorded)
    recorded[0][1] += 1  # as if a package upgrade had rewritten that header
    (directory / DEPENDENCIES).write_text(json.dumps(recorded))
    assert prefixes.usable(SHELF) is None
    assert not directory.exists()


def test_headers_that_do_not_compile_are_tried_once(prefixes: PrefixCache) -> None:
    source = b"#include <no_such_header_here>\nint main(){}\n"
    for _ in range(SEEN_BEFORE_BUILD):
        prefixes.usable(source)
    with CancelToken() as token:
        prefixes.run(token)
    for _ in range(SEEN_BEFORE_BUILD):
        assert prefixes.usable(source) is None
    assert not prefixes.pending()  # nothing left to build: not tried again
    assert [p.name for p in prefixes.directory.iterdir()] == []


def test_only_the_most_recently_used_are_kept(prefixes: PrefixCache) -> None:
    sources = [
        f"#include <c{name}>\n".encode()
        for name in ("stdio", "stdlib", "string", "math", "limits", "ctype")
    ]
    for source in sources[: KEEP + 1]:
        _precompile(prefixes, source)
    kept = {p.name for p in prefixes.directory.iterdir()}
    assert len(kept) == KEEP
    assert prefixes.key(leading_includes(sources[0])) not in kept
    prefixes.usable(sources[1])  # used: now the most recent
    _precompile(prefixes, sources[KEEP + 1])
    kept = {p.name for p in prefixes.directory.iterdir()}
    assert prefixes.key(leading_includes(sources[1])) in kept
    assert prefixes.key(leading_includes(sources[2])) not in kept


@pytest.mark.slow
def test_a_cancelled_build_leaves_nothing_and_is_built_later(prefixes: PrefixCache) -> None:
    """A submission arriving cancels the build under way (the judge's cores are its)."""
    source = b"#include <bits/stdc++.h>\nint main(){}\n"
    for _ in range(SEEN_BEFORE_BUILD):
        prefixes.usable(source)
    with CancelToken() as token:
        threading.Timer(0.3, token.cancel).start()
        prefixes.run(token)
    assert [p.name for p in prefixes.directory.iterdir()] == []
    assert prefixes.usable(source) is None
    with CancelToken() as token:
        prefixes.run(token)
    assert prefixes.usable(source) is not None


def test_an_idle_judge_precompiles_what_two_submissions_started_with(tmp_path: Path) -> None:
    """After the second submission, idle, the judge precompiles; the third compiles with it."""
    engine = Engine({"0": load_problems()["0"]}, tmp_path)
    try:
        scores = []
        for attempt in range(3):
            result = engine.judge("0", SHELF + f"// attempt {attempt}\n".encode())
            scores.append(result["score"])
            assert engine.wait_idle(60)
            if attempt == 1:
                [directory] = (tmp_path / "prefixes").iterdir()
                used_before = directory.stat().st_mtime_ns
        assert directory.stat().st_mtime_ns > used_before  # the third compile used it
        assert len(set(scores)) == 1
    finally:
        engine.close()


def test_a_cluster_node_precompiles_between_submissions(tmp_path: Path) -> None:
    """A Ray node compiles through `prepare` and runs single cases, after which it does not
    refill: it still precompiles, once idle, what it is waiting to."""
    engine = Engine({"0": load_problems()["0"]}, tmp_path)
    try:
        for attempt in range(SEEN_BEFORE_BUILD):
            engine.prepare("0", SHELF + f"// attempt {attempt}\n".encode())
            engine.judge_case("0", SHELF + f"// attempt {attempt}\n".encode(), 0)
        assert engine.wait_idle(60)
        [directory] = (tmp_path / "prefixes").iterdir()
        assert (directory / PRECOMPILED).is_file()
    finally:
        engine.close()


@pytest.mark.slow
def test_a_submission_arriving_stops_the_precompiling_until_the_judge_is_idle_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="atoll.judge.precompiled")
    source = b"#include <bits/stdc++.h>\nint main() { return 0; }\n"  # 2 to 3 s to precompile
    engine = Engine({"0": load_problems()["0"]}, tmp_path)
    try:
        for attempt in range(SEEN_BEFORE_BUILD):
            engine.judge("0", source + f"// attempt {attempt}\n".encode())
        prefixes = tmp_path / "prefixes"
        deadline = time.monotonic() + 30
        while not any(prefixes.glob(".prefix-*")):  # precompiling, once the judge is idle
            assert time.monotonic() < deadline
            time.sleep(0.01)
        engine.judge("0", source + b"// arriving\n")
        assert engine.wait_idle(60)  # idle again: precompiled after all
        assert [r for r in caplog.records if "gave way to a submission" in r.getMessage()]
        [directory] = prefixes.iterdir()
        assert (directory / PRECOMPILED).is_file()
    finally:
        engine.close()
