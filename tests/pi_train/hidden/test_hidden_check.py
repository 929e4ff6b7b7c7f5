"""The hidden-variant checker: honest functions pass, attacks earn nothing and learn nothing.

Every submission runs for real in atoll's sandbox, behind the same
SandboxFusion-compatible service `atoll sandbox fusion-serve` runs, and is
sent there by SandboxFusion's own client. There are as many honest
submissions (both languages, both families, BigInt and decimal-string
results, debug output) as attacks (forged markers, reading the harness's
files, endless loops, exiting early).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.ports import free_port

from atoll.core.sandbox.fusion import EmbeddedFusionServer, NotLoopbackError
from atoll.pi_train.hidden.families import FAMILIES, Case
from atoll.pi_train.hidden.harness import (
    CheckResult,
    build_program,
    check_submission,
    new_markers,
    score_output,
)

pytestmark = pytest.mark.timeout(300)

PY_MULTIPLES = """
from itertools import combinations
from math import lcm


def solve(factors, limit):
    distinct = sorted(set(factors))
    total = 0
    for size in range(1, len(distinct) + 1):
        for chosen in combinations(distinct, size):
            step = lcm(*chosen)
            count = (limit - 1) // step
            total += (-1) ** (size + 1) * step * count * (count + 1) // 2
    return total
"""

PY_RECURRENCE = """
def solve(a, b, limit, modulus, residue):
    total = 0
    for term in (a, b):
        if term <= limit and term % modulus == residue:
            total += term
    x, y = a, b
    while x + y <= limit:
        x, y = y, x + y
        if y % modulus == residue:
            total += y
    return total
"""

JS_MULTIPLES_BIGINT = """
function gcd(a, b) { while (b) { [a, b] = [b, a % b]; } return a; }
function solve(factors, limit) {
  const fs = [...new Set(factors)].map(BigInt);
  let total = 0n;
  for (let mask = 1; mask < (1 << fs.length); mask++) {
    let step = 1n, bits = 0;
    fs.forEach((f, i) => { if (mask & (1 << i)) { step = step * f / gcd(step, f); bits++; } });
    const n = (BigInt(limit) - 1n) / step;
    const part = step * n * (n + 1n) / 2n;
    total += bits % 2 ? part : -part;
  }
  return total;
}
"""

JS_RECURRENCE = """
function solve(a, b, limit, modulus, residue) {
  let total = 0n;
  const L = BigInt(limit), m = BigInt(modulus), r = BigInt(residue);
  let x = BigInt(a), y = BigInt(b);
  for (const t of [x, y]) if (t <= L && t % m === r) total += t;
  while (x + y <= L) { [x, y] = [y, x + y]; if (y % m === r) total += y; }
  return total <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(total) : total;
}
"""

HONEST: dict[str, tuple[str, str, str]] = {
    # name: (family, language, code)
    "python inclusion-exclusion": ("multiples", "python", PY_MULTIPLES),
    "python with debug output on stdout and stderr": (
        "multiples",
        "python",
        PY_MULTIPLES.replace(
            "    return total",
            "    print('total', total)\n    import sys\n    sys.stderr.write('dbg\\n')\n"
            "    return total",
        )
        + "\nprint('loaded', end='')\n",
    ),
    "python own gcd, helper class": (
        "multiples",
        "python",
        """
class Summer:
    @staticmethod
    def multiples_of(step, limit):
        n = (limit - 1) // step
        return step * n * (n + 1) // 2


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def solve(factors, limit):
    fs = list(dict.fromkeys(factors))
    total = 0
    for mask in range(1, 1 << len(fs)):
        step, bits = 1, 0
        for i, f in enumerate(fs):
            if mask >> i & 1:
                step = step * f // gcd(step, f)
                bits += 1
        total += Summer.multiples_of(step, limit) * (1 if bits % 2 else -1)
    return total


if __name__ == "__main__":
    print(solve([3, 5], 10))
""",
    ),
    "python recurrence walk": ("recurrence", "python", PY_RECURRENCE),
    "python recurrence as a generator": (
        "recurrence",
        "python",
        """
def terms(a, b):
    yield a
    yield b
    while True:
        a, b = b, a + b
        yield b


def solve(a, b, limit, modulus, residue):
    total = 0
    for n, t in enumerate(terms(a, b)):
        if n >= 2 and t > limit:
            return total
        if t <= limit and t % modulus == residue:
            total += t
""",
    ),
    "python with non-ASCII text": (
        "recurrence",
        "python",
        "# Σ over the terms — a naïve walk is fast enough: they grow like φⁿ\n"
        + PY_RECURRENCE.replace("    return total", "    print('café ∑', total)\n    return total"),
    ),
    "javascript BigInt": ("multiples", "javascript", JS_MULTIPLES_BIGINT),
    "javascript decimal string, console output": (
        "multiples",
        "javascript",
        JS_MULTIPLES_BIGINT.replace(
            "  return total;", '  console.log("total", total);\n  return total.toString();'
        ),
    ),
    "javascript recurrence, Number when safe": ("recurrence", "javascript", JS_RECURRENCE),
    "javascript recurrence as an arrow function": (
        "recurrence",
        "javascript",
        JS_RECURRENCE.replace(
            "function solve(a, b, limit, modulus, residue) {",
            "const solve = (a, b, limit, modulus, residue) => {",
        ).rstrip()
        + ";\nprocess.stderr.write('ready\\n');\n",
    ),
    "javascript module.exports as well": (
        "recurrence",
        "javascript",
        JS_RECURRENCE + "\nmodule.exports = { solve };\n",
    ),
}

_MARKER_THIEF = r"""
import re, sys
source = open(__file__).read()
markers = re.findall(r"@[0-9a-f]{32}", source)
numbers = [int(n) for n in re.findall(r"\b\d{4,}\b", source)]
for marker in markers:
    print(marker, max(numbers))
"""

ATTACKS: dict[str, tuple[str, str, str]] = {
    "python prints every marker it reads in its source": (
        "multiples",
        "python",
        _MARKER_THIEF + "\ndef solve(factors, limit):\n    return 0\n",
    ),
    "python forges markers then exits before the real calls": (
        "multiples",
        "python",
        _MARKER_THIEF + "\nimport os\nsys.stdout.flush()\nos._exit(0)\n",
    ),
    "python forges markers with the right function and duplicates them": (
        "multiples",
        "python",
        PY_MULTIPLES + _MARKER_THIEF,
    ),
    "python reads the harness's files and environment": (
        "recurrence",
        "python",
        """
import os, re

found = []
paths = [__file__, "/proc/self/environ", "/proc/self/cmdline", "/proc/1/cmdline"]
for root in ("/workspace", "/tmp", os.path.expanduser("~")):
    for place, dirs, files in os.walk(root):
        paths += [os.path.join(place, name) for name in files]
for path in paths:
    try:
        with open(path, "rb") as handle:
            found += re.findall(rb"\\d{6,}", handle.read(1 << 20))
    except OSError:
        pass
print(found[:1000])


def solve(a, b, limit, modulus, residue):
    return max((int(n) for n in found), default=0)
""",
    ),
    "python forks a child that prints markers after the calls": (
        "recurrence",
        "python",
        """
import os, re, time
markers = re.findall(r"@[0-9a-f]{32}", open(__file__).read())
if os.fork() == 0:
    time.sleep(0.3)
    for marker in markers:
        os.write(1, ("\\n" + marker + " 7\\n").encode())
    os._exit(0)


def solve(a, b, limit, modulus, residue):
    return 7
""",
    ),
    "python loops forever": (
        "recurrence",
        "python",
        "def solve(a, b, limit, modulus, residue):\n    while True:\n        pass\n",
    ),
    "python exits from solve": (
        "multiples",
        "python",
        "import sys\n\ndef solve(factors, limit):\n    sys.exit(0)\n",
    ),
    "javascript prints the markers it reads in its source": (
        "multiples",
        "javascript",
        """
const src = require("fs").readFileSync(__filename, "utf8");
for (const m of src.match(/@[0-9a-f]{32}/g) || []) console.log(m + " 12345");
function solve(factors, limit) { return 0; }
""",
    ),
    "javascript loops forever": (
        "recurrence",
        "javascript",
        "function solve(a, b, limit, modulus, residue) { for (;;) {} }\n",
    ),
    "javascript exits from solve": (
        "recurrence",
        "javascript",
        "function solve() { process.exit(0); }\n",
    ),
    "javascript returns floats": (
        "multiples",
        "javascript",
        "function solve(factors, limit) { return limit / 3.5; }\n",
    ),
}


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with EmbeddedFusionServer(workers=2) as server:
        yield server.url


def _hidden_values(family: str, split: str, index: int) -> list[int]:
    return [c.expected for c in FAMILIES[family].instance(split, index).cases]  # type: ignore[arg-type]


def test_as_many_honest_submissions_as_attacks() -> None:
    assert len(HONEST) == len(ATTACKS)
    assert {lang for _, lang, _ in HONEST.values()} == {"python", "javascript"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_submissions_pass_every_case(name: str, sandbox_url: str) -> None:
    family, language, code = HONEST[name]
    for split, index in (("train", 0), ("eval", 5)):
        instance = FAMILIES[family].instance(split, index)  # type: ignore[arg-type]
        result = check_submission(code, language, instance, sandbox_url)
        assert result == CheckResult(len(instance.cases), len(instance.cases), None), split


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attacks_score_nothing(name: str, sandbox_url: str) -> None:
    family, language, code = ATTACKS[name]
    instance = FAMILIES[family].instance("train", 2)
    result = check_submission(code, language, instance, sandbox_url, run_timeout_s=2)
    assert result == CheckResult(0, len(instance.cases), "submission")


@pytest.mark.slow
def test_a_constant_scores_below_total_and_brute_force_keeps_only_small_cases(
    sandbox_url: str,
) -> None:
    instance = FAMILIES["multiples"].instance("eval", 1)
    first = instance.cases[0].expected
    constant = check_submission(
        f"def solve(factors, limit):\n    return {first}\n", "python", instance, sandbox_url
    )
    assert constant == CheckResult(1, len(instance.cases), "submission")
    brute = check_submission(
        "def solve(factors, limit):\n"
        "    return sum(n for n in range(limit) if any(n % f == 0 for f in factors))\n",
        "python",
        instance,
        sandbox_url,
        run_timeout_s=3,
    )
    assert 1 <= brute.passed < brute.total and brute.failure == "submission"


@pytest.mark.slow
@pytest.mark.parametrize("language", ["python", "javascript"])
def test_check_command_scores_a_constant_below_total(
    language: str, tmp_path: Path, venv_bin: Path, sandbox_url: str
) -> None:
    # The constant is the first hidden case's answer: the best a constant can do is that one case.
    instance = FAMILIES["multiples"].instance("eval", 1)
    first = instance.cases[0].expected
    path = tmp_path / ("constant.py" if language == "python" else "constant.js")
    path.write_text(
        f"def solve(factors, limit):\n    return {first}\n"
        if language == "python"
        else f"function solve(factors, limit) {{ return {first}n; }}\n"
    )
    done = subprocess.run(
        [str(venv_bin / "atoll"), "pi", "train", "check", "-f", "multiples", "-l", language,
         "-s", "eval", "-i", "1", "--sandbox-url", sandbox_url, str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == {"passed": 1, "total": len(instance.cases), "failure": "submission"}
    assert result["passed"] < result["total"]


def test_expected_values_never_enter_the_program() -> None:
    for family in FAMILIES.values():
        instance = family.instance("eval", 4)
        markers = new_markers(len(instance.cases))
        for language in ("python", "javascript"):
            program = build_program("", language, [c.args for c in instance.cases], markers)
            assert all(m in program for m in markers)
            # The markers are random hex, whose digit runs are no values of the program's.
            for marker in markers:
                program = program.replace(marker, "@")
            numbers = {int(n) for n in re.findall(r"\d+", program)}
            assert not numbers & {c.expected for c in instance.cases}


def test_markers_are_fresh_and_distinct() -> None:
    first, second = new_markers(50), new_markers(50)
    assert len(set(first)) == 50 and not set(first) & set(second)
    assert all(re.fullmatch(r"@[0-9a-f]{32}", m) for m in first)


CASES = (Case((1,), 10), Case((2,), 20), Case((3,), 30))


def test_scoring_reads_only_marked_decimal_lines() -> None:
    m = new_markers(3)
    noise = "debug 10\n@deadbeef 20\n"
    assert score_output(f"{noise}\n{m[0]} 10\n\n{m[1]} 20\n\n{m[2]} 30\n", m, CASES) == 3
    assert score_output(f"\n{m[0]} 10\n\n{m[2]}  30 \n", m, CASES) == 2  # one missing
    assert score_output(f"\n{m[0]} !error\n{m[1]} 2e1\n{m[2]} 030\n", m, CASES) == 1
    assert score_output(f"{m[0]} 10\n{m[0]} 10\n{m[1]} 20\n{m[2]} 30\n", m, CASES) == 0


CLI_RUNS = {
    # file name: (submission, expected line)
    "reads.py": (
        ATTACKS["python reads the harness's files and environment"][2],
        CheckResult(0, 6, "submission"),
    ),
    "forges.js": (
        ATTACKS["javascript prints the markers it reads in its source"][2].replace(
            "factors, limit", "a, b, limit, modulus, residue"
        ),
        CheckResult(0, 6, "submission"),
    ),
    "loops.py": (ATTACKS["python loops forever"][2], CheckResult(0, 6, "submission")),
    "honest.js": (JS_RECURRENCE, CheckResult(6, 6, None)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CLI_RUNS))
def test_check_command_prints_only_the_counts(
    name: str, tmp_path: Path, venv_bin: Path, sandbox_url: str
) -> None:
    code, expected = CLI_RUNS[name]
    path = tmp_path / name
    path.write_text(code)
    language = "python" if name.endswith(".py") else "javascript"
    done = subprocess.run(
        [str(venv_bin / "atoll"), "pi", "train", "check", "--family", "recurrence",
         "--language", language, "--split", "eval", "--index", "7",
         "--sandbox-url", sandbox_url, "--timeout", "2", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert json.loads(done.stdout) == expected.to_json()
    output = done.stdout + done.stderr
    assert not any(str(v) in output for v in _hidden_values("recurrence", "eval", 7))


@pytest.mark.slow
def test_check_command_starts_its_own_sandbox(tmp_path: Path, venv_bin: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(PY_MULTIPLES)
    done = subprocess.run(
        [str(venv_bin / "atoll"), "pi", "train", "check", "-f", "multiples", "-l", "python",
         "-s", "train", "-i", "3", str(solution)],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "SANDBOX_FUSION_ENDPOINT"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"passed": 6, "total": 6, "failure": None}


@pytest.mark.slow
def test_an_unreachable_sandbox_is_an_infrastructure_failure_not_a_score(
    tmp_path: Path, venv_bin: Path
) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(PY_MULTIPLES)
    url = f"http://127.0.0.1:{free_port()}"
    instance = FAMILIES["multiples"].instance("train", 0)
    assert check_submission(PY_MULTIPLES, "python", instance, url) == CheckResult(
        0, 6, "infrastructure"
    )
    done = subprocess.run(
        [str(venv_bin / "atoll"), "pi", "train", "check", "-f", "multiples", "-l", "python",
         "-s", "train", "-i", "0", "--sandbox-url", url, str(solution)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert json.loads(done.stdout) == {"passed": 0, "total": 6, "failure": "infrastructure"}
    assert done.stderr.strip().splitlines() == [
        f"error: the sandbox ({url}) failed; this is not a score"
    ]


def test_text_no_sandbox_accepts_is_the_submissions_failure() -> None:
    instance = FAMILIES["multiples"].instance("train", 0)
    closed = f"http://127.0.0.1:{free_port()}"  # never reached: nothing is sent
    for code in ("def solve(factors, limit):\n    return '\ud800'\n", "#" * (2 << 20)):
        result = check_submission(code, "python", instance, closed)
        assert result == CheckResult(0, 6, "submission")


def test_a_sandbox_off_this_machine_is_refused(tmp_path: Path, venv_bin: Path) -> None:
    instance = FAMILIES["multiples"].instance("train", 0)
    with pytest.raises(NotLoopbackError):
        check_submission(PY_MULTIPLES, "python", instance, "http://10.1.2.3:8080")
    with pytest.raises(ValueError, match="unknown language"):
        check_submission(PY_MULTIPLES, "julia", instance, "http://127.0.0.1:8080")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "primes"], "unknown family 'primes'"),
        (["-l", "julia"], "unknown language 'julia'"),
        (["-s", "test"], "unknown split 'test'"),
        (["--sandbox-url", "http://192.0.2.1:8080"], "is not on loopback"),
        (["--missing-file"], "cannot read"),
    ],
)
def test_check_command_bad_input_is_one_error_line(
    args: list[str], message: str, tmp_path: Path, venv_bin: Path
) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(PY_MULTIPLES)
    options = {"-f": "multiples", "-l": "python", "-s": "train", "-i": "0"}
    path = str(solution)
    if args == ["--missing-file"]:
        path, args = str(tmp_path / "absent.py"), []
    for flag, value in zip(args[::2], args[1::2], strict=True):
        options[flag] = value
    argv = [str(venv_bin / "atoll"), "pi", "train", "check"]
    for flag, value in options.items():
        argv += [flag, value]
    done = subprocess.run([*argv, path], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
