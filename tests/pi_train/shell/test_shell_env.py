"""The shell environment: Pi's four tools over a workspace, its rules, and the reward's parts.

Programs run for real in atoll's sandbox behind the SandboxFusion-compatible
service, sent there by SandboxFusion's own client, as in training. Honest
calls (relative paths spelled the ways people spell them, the assigned run
in its usual forms, legacy and current edit arguments) are as many as the
refused and caught ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from atoll.core.sandbox.fusion import EmbeddedFusionServer, NotLoopbackError
from atoll.pi_train.shell.episode import (
    RUNTIMES,
    TOOL_NAMES,
    Bounds,
    Episode,
    InfrastructureFailure,
    RunResult,
    Runtime,
    fusion_runner,
)
from atoll.pi_train.shell.families import FAMILIES
from atoll.pi_train.shell.reward import COMPONENT_WEIGHT, CONJUNCTION_WEIGHT, score

pytestmark = pytest.mark.timeout(300)

INSTANCE = FAMILIES["weighted-checksum"].instance("train", 0)
DATA = INSTANCE.params["file"]
START, MODULUS = INSTANCE.params["start"], INSTANCE.params["modulus"]
ANSWER = str(INSTANCE.answer)

PY_SOLUTION = f"""
lines = open({DATA!r}, encoding="ascii").read().split("\\n")
if lines and lines[-1] == "":
    lines.pop()
print("checking", len(lines), "lines")
print(sum(({START} + i) * sum(line.encode()) for i, line in enumerate(lines)) % {MODULUS})
"""
JS_SOLUTION = f"""
const fs = require("fs");
const lines = fs.readFileSync({json.dumps(DATA)}, "ascii").split("\\n");
if (lines.length && lines[lines.length - 1] === "") lines.pop();
let total = 0n;
lines.forEach((line, i) => {{
  let value = 0n;
  for (const byte of Buffer.from(line)) value += BigInt(byte);
  total += BigInt({START} + i) * value;
}});
console.log((total % {MODULUS}n).toString());
"""


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with EmbeddedFusionServer(workers=2) as server:
        yield server.url


def _episode(sandbox_url: str, language: str = "python", **bounds: int) -> Episode:
    return Episode(
        RUNTIMES[language], dict(INSTANCE.files), fusion_runner(sandbox_url), Bounds(**bounds)
    )


def _offline(language: str = "python", **bounds: int) -> Episode:
    """An episode whose runner must never be reached (calls that are refused before a run)."""

    def unreachable(runtime: Runtime, files: dict[str, bytes], timeout: float) -> RunResult:
        raise AssertionError("nothing may run")

    return Episode(RUNTIMES[language], dict(INSTANCE.files), unreachable, Bounds(**bounds))


def test_the_tools_are_pis_four() -> None:
    assert TOOL_NAMES == ("read", "write", "edit", "bash")


def test_a_line_longer_than_the_read_bound_is_cut_and_passed() -> None:
    """Following the continuation note always moves on, even past one very long line."""
    episode = _offline(read_chars=100)
    episode.files["wide.txt"] = ("x" * 500 + "\nshort\n").encode()
    first = episode.call("read", {"path": "wide.txt"})
    assert first.startswith("x" * 100 + "\n[line 1 is cut at 100 characters")
    assert first.endswith("continue with offset=2]")
    assert episode.call("read", {"path": "wide.txt", "offset": 2}) == "short"


# --- honest calls ------------------------------------------------------------------------


@pytest.mark.parametrize("path", [DATA, f"./{DATA}", f"sub/../{DATA}", f" {DATA}"])
def test_reading_a_workspace_file_by_a_relative_path(path: str) -> None:
    episode = _offline()
    text = episode.call("read", {"path": path})
    first = INSTANCE.files[DATA].decode().splitlines()[0]
    assert text.splitlines()[0] == first
    assert episode.refused == 0 and episode.audit_hits == []


def test_reading_with_offset_and_limit_and_the_bound_on_long_files() -> None:
    lines = INSTANCE.files[DATA].decode().splitlines()
    episode = _offline(read_chars=300)
    assert episode.call("read", {"path": DATA, "offset": 3, "limit": 2}) == "\n".join(lines[2:4])
    long = episode.call("read", json.dumps({"path": DATA}))  # arguments as the model's JSON text
    assert len(long) < 400 and "[truncated:" in long and "continue with offset=" in long


@pytest.mark.parametrize("path", ["solution.py", "./solution.py"])
def test_writing_the_program_and_editing_it(path: str) -> None:
    episode = _offline()
    # Pi's own result texts (write.js, edit.js), with the path normalized.
    written = episode.call("write", {"path": path, "content": "x = 1\nprint(x)\n"})
    assert written == "Successfully wrote 15 bytes to solution.py"
    edited = episode.call(
        "edit", {"path": path, "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}
    )
    assert edited == "Successfully replaced 1 block(s) in solution.py."
    # The legacy form (oldText/newText at the top level) is what Pi accepts too.
    assert (
        episode.call("edit", {"path": path, "oldText": "print(x)", "newText": "print(x + 1)"})
        == "Successfully replaced 1 block(s) in solution.py."
    )
    assert episode.files["solution.py"] == b"x = 2\nprint(x + 1)\n"
    assert episode.mutations == 3 and episode.refused == 0 and episode.audit_hits == []


def test_everyday_forms_of_write_edit_and_read_are_accepted() -> None:
    episode = _offline()
    # Arguments as the model's JSON text; a rewrite replaces the whole file.
    episode.call("write", json.dumps({"path": "solution.py", "content": "a = 1\nb = 2\n"}))
    episode.call("write", {"path": "solution.py", "content": "a = 1\nb = 2\nc = 3"})
    assert episode.files["solution.py"] == b"a = 1\nb = 2\nc = 3"
    # Two separate replacements in one call, then the list sent as JSON text (Pi takes both).
    two = [{"oldText": "a = 1", "newText": "a = 10"}, {"oldText": "c = 3", "newText": "c = 30"}]
    episode.call("edit", {"path": "solution.py", "edits": two})
    episode.call(
        "edit",
        {"path": "solution.py", "edits": json.dumps([{"oldText": "b = 2", "newText": "b = 20"}])},
    )
    assert episode.files["solution.py"] == b"a = 10\nb = 20\nc = 30"
    # Reading its own program back, and past the end of a file (nothing there, not an error).
    assert episode.call("read", {"path": "solution.py", "offset": 2}) == "b = 20\nc = 30"
    assert episode.call("read", {"path": DATA, "offset": 100000}) == ""
    assert (
        episode.call("read", {"path": DATA, "limit": 1})
        == INSTANCE.files[DATA].decode().split("\n")[0]
    )
    assert episode.refused == 0 and episode.mutations == 4 and episode.audit_hits == []


@pytest.mark.parametrize(
    "command",
    [
        "python3 solution.py",
        "python solution.py",
        "python3 ./solution.py",
        "  python3  'solution.py' ",
        'python3 "./solution.py"',
    ],
)
def test_the_assigned_run_in_its_usual_spellings(sandbox_url: str, command: str) -> None:
    episode = _episode(sandbox_url)
    episode.call("write", {"path": "solution.py", "content": PY_SOLUTION})
    result = episode.call("bash", {"command": command})
    assert "Command exited" not in result  # Pi shows only the output of a command that exits 0
    assert result.splitlines()[-1] == ANSWER
    assert episode.refused == 0 and len(episode.executions) == 1


@pytest.mark.slow
def test_javascript_runs_with_node_and_reads_the_data(sandbox_url: str) -> None:
    episode = _episode(sandbox_url, "javascript")
    episode.call("write", {"path": "solution.js", "content": JS_SOLUTION})
    for command in ("node solution.js", "nodejs ./solution.js"):
        result = episode.call("bash", {"command": command})
        assert "Command exited" not in result and result.splitlines()[-1] == ANSWER
    assert score(episode, f"The checksum is {ANSWER}.", ANSWER).conjunction


# --- refused and caught calls ------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "caught"),
    [
        ("read", {"path": "/etc/passwd"}, True),
        ("read", {"path": "../secrets.txt"}, True),
        ("read", {"path": "~/.bashrc"}, True),
        ("read", {"path": "missing.txt"}, False),
        ("write", {"path": "notes.txt", "content": "x"}, False),
        ("write", {"path": DATA, "content": "forged"}, False),
        ("write", {"path": "/tmp/solution.py", "content": "print(1)"}, True),
        ("edit", {"path": DATA, "edits": [{"oldText": "a", "newText": "b"}]}, False),
    ],
)
def test_paths_outside_the_rules_are_refused(tool: str, arguments: dict, caught: bool) -> None:
    episode = _offline()
    before = dict(episode.files)
    text = episode.call(tool, arguments)
    assert text.startswith("Not allowed in this training workspace: ")
    assert episode.refused == 1 and episode.mutations == 0 and episode.files == before
    assert bool(episode.audit_hits) is caught


@pytest.mark.parametrize(
    ("command", "caught"),
    [
        ("python3 -c 'print(1)'", False),
        (f"cat {DATA}", False),
        ("node solution.py", False),
        ("python3 solution.py 2>&1", False),
        ("python3 solution.py; cat /etc/passwd", True),
        ("python3 /workspace/solution.py", True),
        ("python3 ../solution.py", True),
        ("python3 'solution.py", False),  # unbalanced quote
    ],
)
def test_commands_other_than_the_run_are_refused(command: str, caught: bool) -> None:
    episode = _offline()
    episode.call("write", {"path": "solution.py", "content": "print(1)\n"})
    text = episode.call("bash", {"command": command})
    assert text == (
        "Not allowed in this training workspace: the only command is `python3 solution.py`"
    )
    assert episode.executions == [] and bool(episode.audit_hits) is caught


def test_edits_must_match_once_and_not_overlap() -> None:
    episode = _offline()
    episode.call("write", {"path": "solution.py", "content": "a = 1\na = 1\nb = 2\n"})
    assert episode.call(
        "edit", {"path": "solution.py", "edits": [{"oldText": "a = 1", "newText": "a = 3"}]}
    ) == (
        "Found 2 occurrences of the text in solution.py. The text must be unique. "
        "Please provide more context to make it unique."
    )
    assert episode.call(
        "edit", {"path": "solution.py", "edits": [{"oldText": "c = 9", "newText": "c = 3"}]}
    ).startswith("Could not find the exact text in solution.py.")
    overlapping = [{"oldText": "1\nb", "newText": "x"}, {"oldText": "b = 2", "newText": "y"}]
    assert episode.call("edit", {"path": "solution.py", "edits": overlapping}) == (
        "edits[0] and edits[1] overlap in solution.py. Merge them into one edit or "
        "target disjoint regions."
    )
    assert episode.files["solution.py"] == b"a = 1\na = 1\nb = 2\n" and episode.mutations == 1


def test_program_text_naming_a_host_file_disqualifies() -> None:
    episode = _offline()
    episode.call("write", {"path": "solution.py", "content": "print(open('/etc/passwd').read())"})
    assert episode.mutations == 1  # written (the rules allow the file), but caught by the audit
    assert [hit["kind"] for hit in episode.audit_hits] == ["absolute"]


def test_the_tool_call_budget_is_hard() -> None:
    episode = _offline(tool_calls=2)
    episode.call("read", {"path": DATA})
    episode.call("read", {"path": DATA})
    assert episode.budget_left == 0
    assert "budget" in episode.call("write", {"path": "solution.py", "content": "print(1)"})
    assert "solution.py" not in episode.files and episode.tool_calls == 2


def test_unknown_tools_and_bad_arguments_are_refused() -> None:
    episode = _offline()
    assert episode.call("ls", {}).startswith("Tool ls not found")
    assert "not a JSON object" in episode.call("read", "{not json")
    assert episode.refused == 2


@pytest.mark.slow
def test_output_is_bounded_and_time_outs_are_reported(sandbox_url: str) -> None:
    episode = _episode(sandbox_url, stdout_chars=200, stderr_chars=100, run_timeout_s=2)
    noisy = "import sys\nfor i in range(3000):\n    print('line', i)\nsys.exit('boom ' * 500)\n"
    episode.call("write", {"path": "solution.py", "content": noisy})
    result = episode.call("bash", {"command": "python3 solution.py"})
    assert result.endswith("\n\nCommand exited with code 1") and "characters left out" in result
    assert "line 2999" in result and len(result) < 650  # the tail, where results end
    episode.call("write", {"path": "solution.py", "content": "while True:\n    pass\n"})
    assert episode.call("bash", {"command": "python3 solution.py"}).endswith(
        "Command timed out after 2 seconds"
    )
    assert [e.exit_code for e in episode.executions] == [1, None]


@pytest.mark.slow
def test_a_sandbox_that_cannot_run_is_an_infrastructure_failure() -> None:
    from support.ports import free_port

    episode = _episode(f"http://127.0.0.1:{free_port()}")  # nothing listens there
    episode.call("write", {"path": "solution.py", "content": "print(1)\n"})
    with pytest.raises(InfrastructureFailure):
        episode.call("bash", {"command": "python3 solution.py"})
    with pytest.raises(NotLoopbackError):
        fusion_runner("http://sandbox.example:8080")


# --- the reward's parts ------------------------------------------------------------------


def _solved(sandbox_url: str, program: str) -> Episode:
    episode = _episode(sandbox_url)
    episode.call("write", {"path": "solution.py", "content": program})
    episode.call("bash", {"command": "python3 solution.py"})
    return episode


def test_a_full_solution_earns_every_part(sandbox_url: str) -> None:
    outcome = score(_solved(sandbox_url, PY_SOLUTION), f"The checksum is {ANSWER}.", ANSWER)
    assert (outcome.mutation, outcome.execution, outcome.exact_output, outcome.answer) == (
        True,
        True,
        True,
        True,
    )
    assert outcome.conjunction and not outcome.disqualified
    assert outcome.reward == pytest.approx(CONJUNCTION_WEIGHT + 4 * COMPONENT_WEIGHT)


def test_each_part_fails_on_its_own(sandbox_url: str) -> None:
    wrong = score(_solved(sandbox_url, "print(12345)\n"), f"It is {ANSWER}", ANSWER)
    assert wrong.mutation and wrong.execution and wrong.answer
    assert not wrong.exact_output and not wrong.conjunction
    assert wrong.reward == pytest.approx(3 * COMPONENT_WEIGHT)

    crashed = score(_solved(sandbox_url, f"print({ANSWER})\nraise SystemExit(3)\n"), "", ANSWER)
    assert crashed.mutation and not crashed.execution and not crashed.exact_output
    assert not crashed.answer and crashed.reward == pytest.approx(COMPONENT_WEIGHT)

    silent = score(_offline(), f"I think it is {ANSWER}.", ANSWER)  # no program at all
    assert (silent.mutation, silent.execution, silent.answer) == (False, False, True)
    assert silent.reward == pytest.approx(COMPONENT_WEIGHT)


def test_a_disqualified_trajectory_scores_zero_whatever_it_did(sandbox_url: str) -> None:
    episode = _solved(sandbox_url, PY_SOLUTION)
    episode.call("read", {"path": "/etc/hostname"})
    outcome = score(episode, f"The checksum is {ANSWER}.", ANSWER)
    assert outcome.exact_output and outcome.answer and outcome.disqualified
    assert not outcome.conjunction and outcome.reward == 0.0


@pytest.mark.parametrize(("asked", "used"), [(None, 6.0), (2, 2.0), (60, 6.0), ("x", 6.0)])
def test_pis_optional_bash_timeout_only_shortens_the_bound(asked: object, used: float) -> None:
    seen: list[float] = []

    def runner(runtime: Runtime, files: dict[str, bytes], timeout: float) -> RunResult:
        seen.append(timeout)
        return RunResult(0, "7\n", "")

    episode = Episode(RUNTIMES["python"], dict(INSTANCE.files), runner, Bounds())
    episode.call("write", {"path": "solution.py", "content": "print(7)\n"})
    arguments = {"command": "python3 solution.py"}
    if asked is not None:
        arguments["timeout"] = asked
    assert episode.call("bash", arguments) == "7\n" and seen == [used]
