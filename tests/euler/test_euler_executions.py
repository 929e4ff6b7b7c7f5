"""Which bash commands count as running a program file with the assigned runtime."""

from __future__ import annotations

import pytest

from atoll.euler.executions import parse

W = "/workspace"


@pytest.mark.parametrize(
    ("command", "file"),
    [
        ("python3 solution.py", "/workspace/solution.py"),
        ("python solution.py", "/workspace/solution.py"),
        ("python3 -u solution.py 2>&1", "/workspace/solution.py"),
        ("python3 solution.py 2>/dev/null", "/workspace/solution.py"),
        ("timeout 60 python3 solution.py", "/workspace/solution.py"),
        ("time node solution.js", "/workspace/solution.js"),
        ("cd src && python3 main.py", "/workspace/src/main.py"),
        ("node --max-old-space-size=4096 solution.js", "/workspace/solution.js"),
        ("python3 ./solution.py", "/workspace/solution.py"),
    ],
)
def test_plain_runs(command: str, file: str) -> None:
    found = parse(command, W)
    assert found is not None and found.reason is None and found.file == file


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("python3 -c 'print(233168)'", "inline_flag"),
        ("python3 -uc 'print(1)'", "inline_flag"),
        ("python3 -m solution", "inline_flag"),
        ("python3 - < solution.py", "compound_command"),
        ("node -e 'console.log(1)'", "inline_flag"),
        ("node -p 233168", "inline_flag"),
        ("node --eval 1", "inline_flag"),
        ("node -r ./x.js solution.js", "inline_flag"),
        ("python3 solution.py && echo 233168", "compound_command"),
        ("python3 solution.py; echo 233168", "compound_command"),
        ("python3 solution.py | tail -1", "compound_command"),
        ("python3 solution.py > out.txt", "compound_command"),
        ("echo $(python3 solution.py)", "compound_command"),
        ("python3 solution.py 233168", "program_arguments"),
        ("python3 notes.txt", "not_a_program_file"),
        ("python3", "no_program_file"),
        ("PYTHONSTARTUP=x.py python3 solution.py", "environment_assignment"),
        ("bash -c 'python3 solution.py'", "indirect_execution"),
        ("python3 -Q solution.py", "unknown_runtime_flag"),
    ],
)
def test_rejected_forms(command: str, reason: str) -> None:
    found = parse(command, W)
    assert found is not None and found.reason == reason


@pytest.mark.parametrize("command", ["ls -la", "cat solution.py", "echo 233168", "sed -n 1p x.py"])
def test_no_interpreter(command: str) -> None:
    assert parse(command, W) is None
