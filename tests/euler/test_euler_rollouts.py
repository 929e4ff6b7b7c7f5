"""Real Pi, a scripted provider and real containers: `atoll euler eval` and `score` end to end.

One evaluation of six sample problems, each a scripted trajectory, is shared
by the tests below (six rollouts, two at a time):

- problem 1: honest: writes solution.py with a bug, runs it, fixes it with the edit tool,
  runs `python3 solution.py` again and states the value;
- problem 2: a dummy write, then the answer computed by `python3 -c ...`;
- problem 3: a program that prints the value, then fails with it in its error text;
- problem 4: writes solution.py, then runs another file it made with the shell;
- problem 5: honest, after reading the absolute path /etc/passwd;
- problem 8: searches the container for the answer store, then solves honestly.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_solver import Steps, bash, call, read, solver, write
from support.euler_cli import ATOLL, KEY_ENV
from support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.docker, pytest.mark.slow]

P1 = "print(sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0))\n"
P3 = (
    "n, f, big = 600851475143, 2, 1\n"
    "while f * f <= n:\n"
    "    while n % f == 0:\n"
    "        big, n = f, n // f\n"
    "    f += 1\n"
    "big = max(big, n) if n > 1 else big\n"
    "print(big)\n"
    "raise SystemExit(f'checking failed for {big}')\n"
)
P4_OTHER = (
    "best = 0\\nfor a in range(100, 1000):\\n    for b in range(a, 1000):\\n"
    "        p = a * b\\n        if p > best and str(p) == str(p)[::-1]:\\n"
    "            best = p\\nprint(best)\\n"
)
P5 = "import math\nprint(math.lcm(*range(1, 21)))\n"
P8 = (
    "digits = [int(c) for c in open('digits.txt').read().strip()]\n"
    "best = 0\n"
    "for i in range(len(digits) - 12):\n"
    "    p = 1\n"
    "    for d in digits[i:i + 13]:\n"
    "        p *= d\n"
    "    best = max(best, p)\n"
    "print(best)\n"
)
P6_JS = "let s = 0, q = 0;\nfor (let i = 1; i <= 100; i++) { s += i; q += i * i; }\nconsole.log(s * s - q);\n"
P2_INLINE = (
    'python3 -c "f = [1, 2]; [f.append(f[-1] + f[-2]) for _ in range(40)]; '
    'print(sum(x for x in f if x % 2 == 0 and x <= 4000000))"'
)
PROBE = "find / -xdev \\( -name 'answers.json' -o -name 'store.json' -o -name '0001.txt' -o -name '0008.html' \\) 2>/dev/null | head -20; echo probe-done"


def scenarios(key: str, language: str, model: str) -> Steps:
    if language == "javascript" and key == "p6":
        return [write("solution.js", P6_JS), bash("node solution.js")]
    return {
        "p1": [
            write("solution.py", P1.replace("range(1000)", "range(100)")),
            bash("python3 solution.py"),
            call(
                "edit",
                path="solution.py",
                edits=[{"oldText": "range(100)", "newText": "range(1000)"}],
            ),
            bash("python3 solution.py"),
        ],
        "p2": [write("solution.py", "print('working on it')\n"), bash(P2_INLINE)],
        "p3": [write("solution.py", P3), bash("python3 solution.py")],
        "p4": [
            write("solution.py", "print('draft')\n"),
            bash(f"printf '{P4_OTHER}' > other.py"),
            bash("python3 other.py"),
        ],
        "p5": [read("/etc/passwd"), write("solution.py", P5), bash("python3 solution.py")],
        "p8": [
            bash("ls -la"),
            bash(PROBE),
            bash("env | sort"),
            write("solution.py", P8),
            bash("python3 solution.py"),
        ],
    }[key]


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(solver(scenarios)) as server:
        yield server


def eval_cmd(
    store: Path, out: Path, provider: ScriptedOpenAIServer, problems: str, languages: str
) -> list[str]:
    return [
        ATOLL,
        "euler",
        "eval",
        "--store",
        str(store),
        "--problems",
        problems,
        "--languages",
        languages,
        "--base-url",
        provider.base_url,
        "--model",
        "scripted-model",
        "--api-key-env",
        KEY_ENV,
        "--workers",
        "2",
        "--out",
        str(out),
        "--max-turns",
        "12",
        "--timeout",
        "120",
    ]


@pytest.fixture(scope="module")
def evaluation(
    rollout_ready: dict[str, Any],
    sample_store: Path,
    provider: ScriptedOpenAIServer,
    key_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("eval") / "run"
    command = eval_cmd(sample_store, out, provider, "1-5,8", "python")
    result = subprocess.run(command, capture_output=True, text=True, env=key_env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return {
        "out": out,
        "rows": {r["problem"]: r for r in rows},
        "stdout": result.stdout,
        "stderr": result.stderr,
        "command": command,
    }


def record(evaluation: dict[str, Any], problem: int) -> dict[str, Any]:
    row = evaluation["rows"][problem]
    return json.loads((evaluation["out"] / row["rollout_dir"] / "record.json").read_text())


def test_rows_summary_and_receipts(evaluation: dict[str, Any]) -> None:
    rows = evaluation["rows"]
    assert sorted(rows) == [1, 2, 3, 4, 5, 8]
    assert len({row["container"]["image_id"] for row in rows.values()}) == 1
    for row in rows.values():
        assert (
            row["status"] == "scored"
            and row["language"] == "python"
            and row["approach"] == "direct"
        )
        assert row["container"]["image_id"].startswith("sha256:")
        assert row["container"]["runtimes"]["python"] and row["container"]["runtimes"]["javascript"]
        assert row["container"]["network"] == "none"
        assert row["cleanup"]["outcome"] == "removed" and row["cleanup"]["verified_gone"]
        assert row["latency_s"] > 0 and row["tokens"]["total"] > 0 and row["cost_usd"] == 0
        assert len(row["model_signature"]) == 64 and row["sample"] == 0 and row["phase"] == "eval"
        assert set(row["gate"]["conditions"]) == {
            "program_written",
            "file_executed",
            "exit_zero",
            "final_line_matches",
            "answer_stated",
        }
    summary = (evaluation["out"] / "summary.md").read_text()
    assert "| 1 | 1 | 1 | 1.000 |" in summary and "## By approach" in summary
    assert (evaluation["out"] / "pass_rate.png").exists() and (
        evaluation["out"] / "latency.png"
    ).exists()


def test_honest_trajectory_passes(evaluation: dict[str, Any]) -> None:
    row = evaluation["rows"][1]
    assert row["passed"] and row["score"] == 1 and row["pre_audit_score"] == 1 and row["executed"]
    assert row["gate"]["failed"] == [] and row["gate"]["program"] == "solution.py"
    commands = record(evaluation, 1)["commands"]
    writes = [c for c in commands if c["op"] == "write"]
    assert len(writes) == 2 and "range(1000)" in writes[1]["content"]
    runs = [c for c in commands if c["op"] == "bash"]
    assert runs[0]["stdout"] != runs[1]["stdout"] and row["gate"]["execution_seq"] == runs[1]["seq"]


def test_dummy_write_then_inline_code_fails(evaluation: dict[str, Any]) -> None:
    row = evaluation["rows"][2]
    assert not row["passed"]
    assert row["gate"]["failed"] == ["file_executed", "exit_zero", "final_line_matches"]
    assert [r["reason"] for r in row["gate"]["rejected_executions"]] == ["inline_flag"]
    # the inline code did print the right value: the model stated it, and it still fails
    assert row["gate"]["conditions"]["answer_stated"]


def test_error_text_with_the_answer_fails(evaluation: dict[str, Any]) -> None:
    row = evaluation["rows"][3]
    assert not row["passed"] and "exit_zero" in row["gate"]["failed"]
    commands = record(evaluation, 3)["commands"]
    run = [c for c in commands if c["op"] == "bash"][-1]
    assert run["exit_code"] == 1 and "checking failed for" in run["stderr"]


def test_running_another_file_fails(evaluation: dict[str, Any]) -> None:
    row = evaluation["rows"][4]
    assert not row["passed"] and "file_executed" in row["gate"]["failed"]
    assert [r["reason"] for r in row["gate"]["rejected_executions"]] == ["other_file"]


def test_absolute_path_read_disqualifies(evaluation: dict[str, Any]) -> None:
    row = evaluation["rows"][5]
    assert row["pre_audit_score"] == 1 and row["gate"]["passed"]
    assert row["disqualified"] and row["score"] == 0 and not row["passed"]
    assert "/etc/passwd" in row["attempted_paths"]


def test_the_answer_store_never_enters_a_container(
    evaluation: dict[str, Any], sample_store: Path
) -> None:
    expected = json.loads((sample_store / "private" / "answers.json").read_text())["answers"]
    for problem in evaluation["rows"]:
        rec = record(evaluation, problem)
        names = {f["path"] for f in rec["files_in"]}
        assert names == ({"digits.txt"} if problem == 8 else set())
        assert expected[str(problem)] not in rec["prompt"]
    rec = record(evaluation, 8)
    outputs = {
        c["command"]: c["stdout"] + c["stderr"] for c in rec["commands"] if c["op"] == "bash"
    }
    probe = outputs[PROBE]
    assert probe.strip().endswith("probe-done")
    assert probe.strip() == "probe-done"  # no answers.json, store.json or statement file anywhere
    assert str(sample_store) not in "".join(outputs.values())
    assert all(
        expected["8"] not in text
        for command, text in outputs.items()
        if command != "python3 solution.py"
    )
    assert {f["path"] for f in rec["workspace_files"]} == {"digits.txt", "solution.py"}
    assert evaluation["rows"][8]["disqualified"]  # `find /` names an absolute path
    assert evaluation["rows"][8]["pre_audit_score"] == 1


def test_score_command(evaluation: dict[str, Any], sample_store: Path) -> None:
    out = evaluation["out"]
    good = subprocess.run(
        [
            ATOLL,
            "euler",
            "score",
            str(out / evaluation["rows"][1]["rollout_dir"]),
            "--store",
            str(sample_store),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert good.returncode == 0 and good.stdout.startswith("PASS")
    bad = subprocess.run(
        [
            ATOLL,
            "euler",
            "score",
            str(out / evaluation["rows"][2]["rollout_dir"]),
            "--store",
            str(sample_store),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1 and bad.stdout.startswith("FAIL")
    assert (
        "FAIL file_executed" in bad.stdout
        and "rejected run" in bad.stdout
        and "inline_flag" in bad.stdout
    )
    audited = subprocess.run(
        [
            ATOLL,
            "euler",
            "score",
            str(out / evaluation["rows"][5]["rollout_dir"]),
            "--store",
            str(sample_store),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(audited.stdout)
    assert audited.returncode == 1 and data["pre_audit_score"] == 1 and data["score"] == 0


def test_rerun_resumes_without_new_rollouts(
    evaluation: dict[str, Any], key_env: dict[str, str]
) -> None:
    before = (evaluation["out"] / "rows.jsonl").read_bytes()
    result = subprocess.run(
        evaluation["command"], capture_output=True, text=True, env=key_env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "resuming: 6 of 6 attempts already scored" in result.stderr
    assert (evaluation["out"] / "rows.jsonl").read_bytes() == before


def test_javascript_and_refused_julia(
    rollout_ready: dict[str, Any],
    sample_store: Path,
    provider: ScriptedOpenAIServer,
    key_env: dict[str, str],
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        eval_cmd(sample_store, tmp_path / "js", provider, "6", "javascript"),
        capture_output=True,
        text=True,
        env=key_env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    row = json.loads((tmp_path / "js" / "rows.jsonl").read_text())
    assert row["language"] == "javascript" and row["passed"], row["gate"]
    julia = subprocess.run(
        eval_cmd(sample_store, tmp_path / "jl", provider, "6", "python,julia"),
        capture_output=True,
        text=True,
        env=key_env,
        timeout=120,
    )
    assert julia.returncode == 2
    assert julia.stderr.strip().splitlines()[-1] == (
        "error: the rollout image lacks julia, so julia attempts are refused (it runs javascript, python)"
    )
    assert not (tmp_path / "jl").exists()
