"""The tool-protocol corpus, without a Tinker server: determinism, manifest, no Euler content,
tool results that are what real tools return, and conversations the evaluation's gate and
path audit pass."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import ci
from support.tinker_local import run_atoll

from atoll.euler import Catalog, Problem, sample_catalog, write_store
from atoll.euler.gate import GateInput, Operation, score
from atoll.euler.gate import ToolCall as GateToolCall
from atoll.pi import audit_tool_calls
from atoll.pi_train.bootstrap import build, corpus
from atoll.pi_train.bootstrap.guard import Guard, default_guard
from atoll.pi_train.shell.pi_tools import ran

WORKDIR = "/workspace"  # where the evaluation's container mounts the workspace


def _corpus(out: Path, seed: int = 0, count: int = 40, stores: tuple[Path, ...] = ()) -> bytes:
    build.write(out, seed, count, default_guard(stores))
    return (out / build.CONVERSATIONS).read_bytes()


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"(?<!\d)\d+(?!\d)", text))


def _store(root: Path, answers: dict[int, str], statements: dict[int, str]) -> Path:
    problems = {
        n: Problem(n, f"Problem {n}", f"<p>{text}</p>", text, None)
        for n, text in statements.items()
    }
    write_store(Catalog(problems, answers, {}, {"name": "test"}), root)
    return root


@pytest.mark.slow
def test_the_same_seed_gives_the_same_bytes_and_another_seed_others(tmp_path: Path) -> None:
    first = _corpus(tmp_path / "a", seed=7)
    assert first == _corpus(tmp_path / "b", seed=7)
    assert first != _corpus(tmp_path / "c", seed=8)
    a = json.loads((tmp_path / "a" / build.MANIFEST).read_text())
    b = json.loads((tmp_path / "b" / build.MANIFEST).read_text())
    assert a == b


def test_the_manifest_counts_and_hashes_what_is_written(tmp_path: Path) -> None:
    _corpus(tmp_path / "c", count=23)
    manifest, records = build.read(tmp_path / "c")
    assert manifest["conversations"] == len(records) == 23
    assert manifest["examples"] == sum(
        1 for r in records for m in r["messages"] if m["role"] == "assistant"
    )
    assert sum(manifest["families"].values()) == 23
    assert set(manifest["families"]) == set(corpus.FAMILIES)
    assert set(manifest["tool_calls"]) == {"read", "write", "edit", "bash"}
    assert [t["name"] for t in manifest["tools"]] == ["read", "write", "edit", "bash"]
    assert manifest["training"]["train_on_what"] == "last_assistant_message"
    # A damaged file no longer matches its manifest and is refused.
    path = tmp_path / "c" / build.CONVERSATIONS
    path.write_bytes(path.read_bytes().replace(b"python3", b"python2", 1))
    with pytest.raises(build.CorpusInputError, match="sha256"):
        build.read(tmp_path / "c")


def test_every_conversation_ends_in_a_reply_and_uses_relative_paths(tmp_path: Path) -> None:
    _corpus(tmp_path / "c", count=40)
    _, records = build.read(tmp_path / "c")
    for record in records:
        messages = record["messages"]
        assert messages[0]["role"] == "user" and messages[-1]["role"] == "assistant"
        assert "tool_calls" not in messages[-1]
        for message in messages:
            for call in message.get("tool_calls", []):
                arguments = call["arguments"]
                # The names a call acts on: a path argument, or the words of a command.
                names = [arguments["path"]] if "path" in arguments else []
                names += arguments.get("command", "").split()
                for name in names:
                    assert not name.startswith(("/", "~")) and ".." not in name, name


@pytest.mark.slow
def test_the_corpus_holds_no_sample_answer_and_no_statement_text(tmp_path: Path) -> None:
    text = _corpus(tmp_path / "c", count=200).decode()
    sample = sample_catalog()
    numbers = _numbers(text)
    for answer in sample.answers.values():
        assert answer not in numbers, answer
    words = re.findall(r"[a-z0-9]+", text.lower())
    flat = " " + " ".join(words) + " "
    for problem in sample.problems.values():
        for sentence in re.split(r"[.?!:]\s", problem.text):
            sentence_words = re.findall(r"[a-z0-9]+", sentence.lower())
            if len(sentence_words) >= 6:
                assert " " + " ".join(sentence_words) + " " not in flat, sentence


@pytest.mark.slow
def test_a_given_store_keeps_its_answers_out_even_those_the_generator_makes(
    tmp_path: Path,
) -> None:
    plain = _corpus(tmp_path / "plain", count=60).decode()
    # Answers the unguarded corpus does print: the guard must keep them out once a store has them.
    printed = sorted(n for n in _numbers(plain) if len(n) >= 4)[:5]
    assert printed, "the corpus prints no four-digit number to test with"
    store = _store(
        tmp_path / "store",
        {n: value for n, value in enumerate(printed, start=1)},
        {n: f"Problem text number {n} about counting things." for n in range(1, len(printed) + 1)},
    )
    guarded = _corpus(tmp_path / "guarded", count=60, stores=(store,)).decode()
    assert guarded != plain
    assert not _numbers(guarded) & set(printed)
    manifest = json.loads((tmp_path / "guarded" / build.MANIFEST).read_text())
    assert manifest["redrawn"] >= 1
    assert [s["answers_checked"] for s in manifest["guard"]["sources"]] == [10, len(printed)]


@pytest.mark.slow
def test_a_store_whose_statement_is_our_own_task_text_makes_the_build_refuse(
    tmp_path: Path, venv_bin: Path
) -> None:
    store = _store(
        tmp_path / "store",
        {1: "123456789"},
        # Words every `fix-name-error` conversation says, whatever it draws.
        {1: "The loop adds into total, but the last line prints totl, a typo."},
    )
    out = tmp_path / "c"
    done = run_atoll(
        venv_bin, {}, "pi", "bootstrap", "build", str(out), "--conversations", "5",
        "--store", str(store), timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("error:") == 1 and "statement text" in done.stderr
    assert not (out / build.MANIFEST).exists()


def _gate_input(record: dict[str, Any]) -> GateInput:
    """The conversation as the Pi evaluation's record would show it: each tool call and the
    bridge operation it caused in the workspace, with the exit status and output the
    corpus's tool results give."""
    results = {m["tool_call_id"]: m["content"] for m in record["messages"] if m["role"] == "tool"}
    calls: dict[str, GateToolCall] = {}
    operations: list[Operation] = []
    for message in record["messages"]:
        for call in message.get("tool_calls", []):
            name, arguments, result = call["name"], call["arguments"], results[call["id"]]
            calls[call["id"]] = GateToolCall(call["id"], name, arguments)
            seq = len(operations) + 1
            if name == "bash":
                status = re.search(r"(?:^|\n\n)Command exited with code (\d+)$", result)
                stdout = result[: status.start()] if status else result
                operations.append(
                    Operation(seq, "bash", call["id"], command=arguments["command"],
                              cwd=WORKDIR, exit_code=int(status.group(1)) if status else 0,
                              stdout="" if stdout == "(no output)" else stdout)
                )  # fmt: skip
                continue
            path = f"{WORKDIR}/{arguments['path']}"
            done = name == "write" or (name == "edit" and result.startswith("Successfully"))
            operations.append(Operation(seq, "write" if done else "read", call["id"], path=path))
    return GateInput(WORKDIR, tuple(operations), calls, record["messages"][-1]["content"])


def test_every_conversation_passes_the_gate_and_the_audit_it_will_be_judged_by(
    tmp_path: Path,
) -> None:
    """What the corpus teaches is what the Pi evaluation scores: atoll-euler's functional gate
    v2 (whose conditions shell RL rewards) passes every conversation for its language and
    answer, and the path audit finds nothing in it."""
    _corpus(tmp_path / "c", count=200)
    _, records = build.read(tmp_path / "c")
    assert {r["family"] for r in records} == set(corpus.FAMILIES)
    for record in records:
        result = score(_gate_input(record), record["answer"], record["language"])
        assert result.passed, (record["id"], result.details)
        calls = [
            GateToolCall(call["id"], call["name"], call["arguments"])
            for message in record["messages"]
            for call in message.get("tool_calls", [])
        ]
        assert audit_tool_calls(calls) == [], record["id"]


def test_the_guard_accepts_everyday_numbers_and_rejects_an_answer_token() -> None:
    guard = Guard()
    guard.add("s", ["6857", "12"], ["Find the largest prime factor of the number given here."])
    assert guard.violation("printed 16857 and 68570; exit code 12") is None
    assert guard.violation("the largest prime factor is here") is None
    assert guard.violation("it printed 6857") == "contains the Euler answer 6857"
    assert guard.violation("Find the largest prime factor of the number given") is not None


def _replay_call(workdir: Path, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """What the tool does in `workdir`: (its result, whether it failed), as Pi reports them."""
    path = workdir / arguments.get("path", "")
    if tool == "read":
        return path.read_text(), False
    if tool == "write":
        path.write_text(arguments["content"])
        return corpus.wrote(arguments["path"], arguments["content"]), False
    if tool == "edit":
        text = path.read_text()
        for edit in arguments["edits"]:
            if text.count(edit["oldText"]) != 1:
                return corpus.edit_not_found(arguments["path"]), True
            text = text.replace(edit["oldText"], edit["newText"])
        path.write_text(text)
        return corpus.edited(arguments["path"]), False
    done = subprocess.run(
        ["bash", "-c", arguments["command"]], cwd=workdir, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    return (ran(output, done.returncode), True) if done.returncode else (output, False)


@pytest.mark.slow
def test_every_tool_result_is_what_the_real_tool_returns(tmp_path: Path) -> None:
    ci.need(shutil.which("node") is not None, "node is not installed", "CI installs Node.js")
    _corpus(tmp_path / "c", count=15)  # three of each family, both languages
    _, records = build.read(tmp_path / "c")
    for record in records:
        workdir = tmp_path / record["id"].replace("/", "-")
        workdir.mkdir()
        for name, content in record["workspace"].items():
            (workdir / name).write_text(content)
        calls = {}
        for message in record["messages"]:
            for call in message.get("tool_calls", []):
                calls[call["id"]] = _replay_call(workdir, call["name"], call["arguments"])
            if message["role"] != "tool":
                continue
            actual, _failed = calls[message["tool_call_id"]]
            recorded = message["content"]
            if "Traceback" in recorded:
                # Tracebacks differ by Python version in their middle lines (carets, paths);
                # the exception line and the exit status are what the reader acts on.
                last = [ln for ln in recorded.splitlines() if ln.strip()]
                got = [ln for ln in actual.splitlines() if ln.strip()]
                assert got[-1] == last[-1], record["id"]
                assert got[-2] == last[-2], record["id"]
            else:
                assert actual == recorded, (record["id"], actual, recorded)
