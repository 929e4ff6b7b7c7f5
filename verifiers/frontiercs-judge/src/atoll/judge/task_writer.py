"""Write a Harbor task for one FrontierCS problem, shaped like `polyomino_packing`.

The task holds what Harbor and Guidance-TTT read: `task.toml`,
`instruction.md` (the problem's statement, then how the judge runs and
scores a program), `contract.json`, the environment (the polyomino task's
image and socket mount), a verifier that reaches the judge through its unix
socket (the polyomino task's `score.py`, pointed at this problem), and a
seed in `solution/` (the user's program, or a trivial one) that the judge
has scored: its result is recorded in `solution/result.json`.

No test data, checker or interactor goes into the task: they stay in the
checkout, with the judge. The task is written into a temporary directory
beside its destination and moved there in one rename, so an interrupted
write leaves nothing half-made.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.sizes import MiB
from atoll.judge.compiler import FLAGS
from atoll.judge.engine import Engine
from atoll.judge.problems import Mode, Problem

TRIVIAL_SEED = """\
// A trivial seed: it compiles and does nothing. The search starts from here.
int main() { return 0; }
"""
TRIVIAL_SUMMARY = (
    "A trivial placeholder: the program reads nothing and prints nothing, so every case "
    "scores whatever the judge gives an empty answer (usually 0). It only marks where the "
    "search starts."
)
USER_SUMMARY = "The seed program given when this task was written; no summary was provided."
TEMPLATE_TASK = "polyomino_packing"  # its environment and verifier are shared


class TaskWriteError(Exception):
    """The task cannot be written; the message says what to change."""


@dataclass(frozen=True)
class WrittenTask:
    directory: Path
    seed_score: float | None  # None: the seed did not compile
    seed_status: str


def write_task(
    problem: Problem,
    out: Path,
    engine: Engine,
    seed: bytes | None = None,
    source: str = "",
) -> WrittenTask:
    """Judge the seed, then write the task for `problem` at `out` (which must not exist yet)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise TaskWriteError(f"{out} already exists and is not empty; choose another --out")
    program = seed if seed is not None else TRIVIAL_SEED.encode()
    judged = engine.judge(problem.id, program)
    record = _seed_record(problem, program, judged)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _fill(staging, problem, program, seed is None, record, source)
        staging.chmod(0o755)
        if out.exists():
            out.rmdir()  # empty, checked above
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return WrittenTask(out, record.get("score"), record["status"])


def _fill(
    root: Path,
    problem: Problem,
    program: bytes,
    trivial: bool,
    record: dict[str, Any],
    source: str,
) -> None:
    template = _template_dir()
    (root / "environment").mkdir()
    for name in ("Dockerfile", "docker-compose.yaml"):
        shutil.copyfile(template / "environment" / name, root / "environment" / name)
    (root / "tests").mkdir()
    shutil.copyfile(template / "tests" / "score.py", root / "tests" / "score.py")
    _text(root / "tests" / "test.sh", _test_sh(problem), executable=True)
    (root / "solution").mkdir()
    (root / "solution" / "solution.cpp").write_bytes(program)
    _text(root / "solution" / "summary.txt", (TRIVIAL_SUMMARY if trivial else USER_SUMMARY) + "\n")
    _text(root / "solution" / "solve.sh", _SOLVE_SH, executable=True)
    _text(root / "solution" / "result.json", json.dumps(record, indent=2) + "\n")
    _text(root / "task.toml", _task_toml(problem, record, source))
    _text(root / "instruction.md", _instruction(problem))
    _text(root / "contract.json", json.dumps(_contract(problem), indent=2) + "\n")
    _text(root / "README.md", _readme(problem, source))


def _template_dir() -> Path:
    from atoll.judge.plugin import task_dir

    found = task_dir(TEMPLATE_TASK)
    if not (found / "tests" / "score.py").is_file():
        raise TaskWriteError(f"the task template {found} is incomplete; reinstall atoll")
    return found


def _seed_record(problem: Problem, program: bytes, judged: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "judge_problem_id": problem.id,
        "program": "solution.cpp",
        "program_sha256": hashlib.sha256(program).hexdigest(),
    }
    if judged["status"] != "done":
        record.update(status="invalid", score=0.0, raw_score=0.0, reward=0.0)
        record["message"] = str(judged.get("error", ""))[:2000]
        return record
    cases = judged["cases"]
    record.update(
        status="valid",
        score=judged["score"],
        raw_score=judged["scoreUnbounded"],
        reward=judged["score"],
        message=judged["result"],
        cases=len(cases),
        statuses=[case["status"] for case in cases],
        ratios=[case["scoreRatio"] for case in cases],
    )
    return record


def _limits_line(problem: Problem) -> str:
    times = sorted({case.limits.cpu_seconds for case in problem.cases})
    memories = sorted({case.limits.memory_bytes // MiB for case in problem.cases})
    time = f"{times[0]:g} s" if len(times) == 1 else f"{times[0]:g} to {times[-1]:g} s"
    memory = f"{memories[0]} MiB" if len(memories) == 1 else f"{memories[0]} to {memories[-1]} MiB"
    return f"{time} of CPU time (all threads together) and {memory} of memory per test case"


def _instruction(problem: Problem) -> str:
    statement = problem.statement().strip()
    cases = len(problem.cases)
    flags = " ".join(FLAGS)
    if problem.mode is Mode.INTERACTIVE:
        io = (
            "This problem is interactive: your program talks with the judge's interactor "
            "through standard input and output. Flush standard output after every line you "
            "write (`fflush(stdout)` or `std::endl`), and read each answer before asking again."
        )
    else:
        io = (
            "Your program reads one test case from standard input and writes its answer to "
            "standard output; the problem's checker reads the answer."
        )
    return f"""# {problem.title}

Write a C++17 program and save it as `/workspace/solution.cpp`. It is compiled
with `g++ {flags}` and judged by the FrontierCS judge on the {cases} test
cases of FrontierCS algorithmic problem {problem.id}, with {_limits_line(problem)}.

{io}

## Scoring

Each test case earns a ratio between 0 and 1 (the checker's `Ratio:`; a case
the checker accepts without one earns 1, any other failure 0). A program that
crashes, or exceeds a time, memory or output limit, earns 0 for that case.
The score is 100 × the mean ratio over all {cases} cases, from 0 to 100:
higher is better.

## The problem (FrontierCS statement)

{statement}
"""


def _contract(problem: Problem) -> dict[str, str]:
    memory = problem.limits.memory_bytes // MiB
    dialogue = (
        " and talks with the judge's interactor over stdin/stdout"
        if (problem.mode is Mode.INTERACTIVE)
        else ""
    )
    return {
        "solution_language": "cpp",
        "mechanism_constraint": (
            "Every mechanism must fit in one C++17 program that uses only the standard library"
            f"{dialogue}, and finishes each test case within {_limits_line(problem)}."
        ),
        "objective": (
            f"Maximize the mean score ratio over the {len(problem.cases)} test cases of "
            f"FrontierCS problem {problem.id} ({problem.title}); see the statement for what "
            f"earns a higher ratio. Memory limit {memory} MiB."
        ),
        "raw_score_label": "score (100 x mean ratio)",
        "score_direction": "max",
        "solution_contract": (
            f"a complete C++17 program (compiled with g++ {' '.join(FLAGS)}) that "
            + (
                "talks with the interactor through standard input and output, flushing each line"
                if problem.mode is Mode.INTERACTIVE
                else "reads one test case from standard input and writes its answer to standard output"
            )
        ),
        "judge_problem_id": problem.id,
    }


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _task_toml(problem: Problem, record: dict[str, Any], source: str) -> str:
    return f"""schema_version = "1.3"

[task]
name = {_toml_string(f"atoll/frontiercs-{problem.id}")}
description = {_toml_string(f"FrontierCS algorithmic problem {problem.id}: {problem.title} (C++17, judged).")}
keywords = ["frontiercs", "algorithmic", "{problem.mode.value}", "c++", "discovery"]

[metadata]
source = {_toml_string(source or f"FrontierCS algorithmic track, problem {problem.id}")}
judge_problem_id = {_toml_string(problem.id)}
problem_type = {_toml_string(problem.mode.value)}
score_range = [0.0, 100.0]
score_direction = "max"
seed_score = {float(record.get("score", 0.0))!r}

[agent]
# One trial may own a whole multi-step search (Guidance-TTT): days, not minutes.
timeout_sec = 1209600.0

[verifier]
# The verifier submits through the judge's socket; the margin covers a busy judge.
timeout_sec = 3600.0
network_mode = "no-network"

[environment]
build_timeout_sec = 600.0
cpus = 2
memory_mb = 4096
storage_mb = 10240
workdir = "/workspace"
network_mode = "public"
"""


def _test_sh(problem: Problem) -> str:
    return f"""#!/bin/bash
# Re-score /workspace/solution.cpp with the FrontierCS judge (problem {problem.id}),
# reached through its unix socket at /run/frontiercs-judge/judge.sock (the
# verifier has no network), and write /logs/verifier/reward.json. If the judge
# cannot be reached, nothing is written and the script fails: never a score.
set -euo pipefail
export FRONTIERCS_PROBLEM_ID={_shell_word(problem.id)}
exec python3 "$(dirname "$0")/score.py"
"""


_SOLVE_SH = """#!/bin/bash
# Install the seed program as the task's answer.
set -euo pipefail
mkdir -p /workspace
install -m 0644 "$(dirname "$0")/solution.cpp" /workspace/solution.cpp
"""


def _readme(problem: Problem, source: str) -> str:
    return f"""# frontiercs/{problem.id}: {problem.title}

A Harbor task for FrontierCS algorithmic problem {problem.id} ({problem.mode.value}),
written by `atoll task frontiercs {problem.id}`. {source}

The judge serves the problem from the FrontierCS checkout (its test data,
checker or interactor never enter this task), so the judge that scores it
must have the checkout: set `FRONTIERCS_HOME` to it, then

    atoll run --agent oracle --task frontiercs/{problem.id} --env atoll-local
    atoll run --agent oracle -p <this directory> --plugin frontiercs-judge --env atoll-local

The `frontiercs-judge` job plugin runs the embedded judge for the job (`atoll
run` adds it by itself for `--task frontiercs/<ID>`); `solution/` holds the
seed and its recorded result.
"""


def _shell_word(value: str) -> str:
    import shlex

    return shlex.quote(value)


def _text(path: Path, text: str, executable: bool = False) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755 if executable else 0o644)
