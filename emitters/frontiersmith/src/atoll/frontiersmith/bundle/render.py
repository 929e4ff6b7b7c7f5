"""A BundleSpec rendered into the exact bytes and modes of each bundle file.

Rendering is a pure function of the spec and the installed grader, so the
same spec always gives the same files and the same bundle hash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from atoll.checker import GRADER_VERSION, Limits, grader_source
from atoll.checker import layout as bundle_layout
from atoll.checker.layout import BundleFile
from atoll.core import sizes
from atoll.frontiersmith.bundle.spec import (
    AGENT_USER,
    BASELINE_SUMMARY_FILE,
    CPUS,
    MEMORY_MB,
    RECIPE,
    REFERENCE_NOTE,
    SOLUTION_SUMMARY_FILE,
    VERIFICATION,
    VERIFICATION_STAGE,
    VERIFIER_USER,
    BundleSpec,
    Scalar,
)

# Everything in instruction.md after this line is written from the contract.
GENERATED_MARK = (
    "<!-- atoll.frontiersmith.bundle: the sections below are written from the task's contract -->"
)

# The keys of reward.json and what each means (per-case detail is in scores.json).
REWARD_KINDS = {
    "reward": (
        "graded: the mean of the per-case scores in [0, 1]; a case whose output is infeasible "
        "or malformed, or whose run crashes or exceeds a limit, scores 0"
    ),
}

SOLVE_SH = """#!/bin/sh
# Install the reference program: the best sampled feasible solution, not a proven optimum.
set -eu
install -m 0644 "$(dirname "$0")/solution.py" /workspace/solution.py
"""

TEST_SH = """#!/bin/sh
# Grade /workspace/solution.py with the task's isolated grader (tests/grader.py, standard
# library only). It checks the task's own generator, scorer and validator first, locks
# /tests, /solution and /logs/verifier, runs the program once per instance as an unused
# unprivileged uid, and writes reward.txt, reward.json and scores.json to /logs/verifier.
# A failed self-check writes no reward and exits non-zero: an error, never a score.
set -eu
exec python3 -I /tests/grader.py grade --tests /tests --submission /workspace/solution.py \\
    --out /logs/verifier --lock /solution --lock /logs/verifier
"""

# A C++ task's scripts: the same steps, with the grader compiling the program once (with the
# flags in tests/contract.json) before it runs the binary per instance.
CPP_SOLVE_SH = """#!/bin/sh
# Install the reference program: the best sampled feasible solution, not a proven optimum.
# The grader compiles it (g++, the flags in tests/contract.json) before running it.
set -eu
install -m 0644 "$(dirname "$0")/solution.cpp" /workspace/solution.cpp
"""

CPP_TEST_SH = """#!/bin/sh
# Grade /workspace/solution.cpp with the task's isolated grader (tests/grader.py, standard
# library only). It checks the task's own generator, scorer and validator first, locks
# /tests, /solution and /logs/verifier, compiles the program once with g++ and the flags in
# tests/contract.json as an unused unprivileged uid under compile limits (a source that does
# not build scores 0 on every instance), runs the binary once per instance as that uid, and
# writes reward.txt, reward.json and scores.json to /logs/verifier.
# A failed self-check writes no reward and exits non-zero: an error, never a score.
set -eu
exec python3 -I /tests/grader.py grade --tests /tests --submission /workspace/solution.cpp \\
    --out /logs/verifier --lock /solution --lock /logs/verifier
"""


def render_files(spec: BundleSpec) -> dict[str, BundleFile]:
    """Every file but task.toml (which carries the hash of these)."""
    texts = {
        "instruction.md": render_instruction(spec),
        "environment/Dockerfile": render_dockerfile(spec.base_image, spec.language),
        "solution/solve.sh": CPP_SOLVE_SH if spec.language == "cpp" else SOLVE_SH,
        "tests/test.sh": CPP_TEST_SH if spec.language == "cpp" else TEST_SH,
        "tests/contract.json": render_contract(spec),
        **spec.sources(),
    }
    texts |= {path: text + "\n" for path, text in _summaries(spec).items() if text}
    if spec.search_contract is not None:
        texts[bundle_layout.SEARCH_CONTRACT] = render_search_contract(spec.search_contract)
    modes = bundle_layout.files_for(spec.language) | bundle_layout.optional_for(spec.language)
    files = {
        path: BundleFile(path, modes[path], text.encode("utf-8")) for path, text in texts.items()
    }
    files["tests/grader.py"] = BundleFile("tests/grader.py", 0o644, grader_source())
    return files


def _summaries(spec: BundleSpec) -> dict[str, str]:
    return {
        BASELINE_SUMMARY_FILE: spec.baseline_summary if spec.baseline is not None else "",
        SOLUTION_SUMMARY_FILE: spec.solution_summary,
    }


def render_search_contract(contract: Mapping[str, str]) -> str:
    """contract.json at the bundle's root, fields in the order the spec gives them."""
    return json.dumps(dict(contract), indent=2, ensure_ascii=False) + "\n"


def render_contract(spec: BundleSpec) -> str:
    return (
        json.dumps(
            spec.contract.to_json(), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False
        )
        + "\n"
    )


def render_dockerfile(base_image: str, language: str = "python") -> str:
    if language == "cpp":
        return render_cpp_dockerfile(base_image)
    return f"""# The task's image: python3 (>= 3.11) for the submission and the grader, and the agent's
# unprivileged account. The agent runs as `{AGENT_USER}` with no network; the verifier runs as
# root. tests/ and solution/ are never part of the image.
FROM {base_image}
RUN python3 -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \\
    && useradd --create-home --shell /bin/bash {AGENT_USER} \\
    && install -d -o {AGENT_USER} -g {AGENT_USER} -m 0755 /workspace
USER {AGENT_USER}
WORKDIR /workspace
"""


def render_cpp_dockerfile(base_image: str) -> str:
    """A C++ task's image: the Python one plus g++ (installed when the base image lacks it)."""
    return f"""# The task's image: g++ for the submission (C++17), python3 (>= 3.11) for the grader, and
# the agent's unprivileged account. The agent runs as `{AGENT_USER}` with no network; the
# verifier runs as root. tests/ and solution/ are never part of the image.
FROM {base_image}
RUN python3 -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \\
    && (command -v g++ >/dev/null || (apt-get update \\
        && apt-get install -y --no-install-recommends g++ libc6-dev \\
        && rm -rf /var/lib/apt/lists/*)) \\
    && g++ --version >/dev/null \\
    && useradd --create-home --shell /bin/bash {AGENT_USER} \\
    && install -d -o {AGENT_USER} -g {AGENT_USER} -m 0755 /workspace
USER {AGENT_USER}
WORKDIR /workspace
"""


def render_limits(limits: Limits) -> str:
    rows = [
        ("CPU time", f"{limits.cpu_seconds:g} s"),
        ("Wall clock", f"{limits.wall_seconds:g} s"),
        ("Memory (address space)", sizes.exact(limits.memory_bytes)),
        ("Processes (including threads)", str(limits.processes)),
        ("Open files", str(limits.open_files)),
        ("Size of a file it writes", sizes.exact(limits.file_size_bytes)),
        ("Standard output", sizes.exact(limits.stdout_bytes)),
        ("Standard error kept", sizes.exact(limits.stderr_bytes)),
        ("Program size", sizes.exact(limits.source_bytes)),
    ]
    return "\n".join(["| Limit | Value |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])


def render_instruction(spec: BundleSpec) -> str:
    contract = spec.contract
    return f"""# {spec.title}

{spec.statement.strip()}

{GENERATED_MARK}

## Submission

{render_submission_rules(spec)}

The grader generates {contract.min_instances} to {contract.max_instances} instances of the kind
described above; they are not available in advance. The reward is the mean of the per-instance
scores. An instance scores 0 when the output is not one JSON object, is infeasible, or the
program crashes or exceeds a limit.

## Runtime limits (per instance)

{render_limits(contract.limits)}

You work as the user `{AGENT_USER}` in `/workspace`, on {CPUS} CPU with {MEMORY_MB // 1024} GB
of memory and no network access.
"""


def render_submission_rules(spec: BundleSpec) -> str:
    """How the program is handed in and run, in the task's language."""
    if spec.language == "cpp":
        build = spec.contract.compile
        assert build is not None  # a cpp contract always has one
        flags = " ".join(build.flags)
        return f"""Write one C++17 program, standard library only, to `/workspace/solution.cpp`. The grader
compiles it once with `g++ solution.cpp {flags} -o solution` (within
{build.limits.cpu_seconds:g} s of CPU time and {sizes.exact(build.limits.memory_bytes)} of memory; a
program that does not compile scores 0 on every instance). For each test instance it starts the
binary afresh in an empty working directory, as an unprivileged user with no network and an
environment of `PATH` and `LANG` only, and writes the instance to its standard input as one
JSON object. The program must write one JSON object to its standard output and exit with
status 0."""
    return """Write one Python 3 program, standard library only, to `/workspace/solution.py`. For each test
instance the grader starts it afresh as `python3 -I solution.py` in an empty working directory,
as an unprivileged user with no network and an environment of `PATH` and `LANG` only, and
writes the instance to its standard input as one JSON object. The program must write one JSON
object to its standard output and exit with status 0."""


def split_instruction(text: str, title: str) -> str:
    """The statement back out of a rendered instruction.md."""
    head = f"# {title}\n\n"
    if not text.startswith(head) or f"\n\n{GENERATED_MARK}\n" not in text:
        raise ValueError("instruction.md was not written by atoll.frontiersmith.bundle")
    return text[len(head) : text.index(f"\n\n{GENERATED_MARK}\n")]


def verifier_timeout(spec: BundleSpec) -> float:
    """Every instance at its wall clock, plus the self-checks and start-up."""
    limits = spec.contract.limits
    build = spec.contract.compile
    compiling = 0.0 if build is None else build.limits.wall_seconds
    return float(spec.contract.max_instances * (limits.wall_seconds + 1.0) + 180.0 + compiling)


def task_toml_data(spec: BundleSpec, bundle_hash: str | None) -> dict[str, Any]:
    """task.toml as values (Harbor 0.20's schema); `bundle_hash` None leaves the hash out."""
    metadata: dict[str, Any] = {
        "recipe": RECIPE,
        "recipe_version": spec.recipe_version,
        "title": spec.title,
        "mutation": spec.mutation,
        "reference": REFERENCE_NOTE,
    }
    if spec.reference_reward is not None:
        metadata["reference_reward"] = spec.reference_reward
    metadata |= {
        "verification": VERIFICATION,
        "verification_stage": VERIFICATION_STAGE,
        "grader_version": GRADER_VERSION,
    }
    if bundle_hash is not None:
        metadata[bundle_layout.HASH_FIELD] = bundle_hash
    metadata["reward_kinds"] = dict(REWARD_KINDS)
    metadata["seed_lineage"] = dict(spec.seed_lineage)
    keywords = list(dict.fromkeys((RECIPE, "optimization", spec.mutation, *spec.keywords)))
    return {
        "schema_version": "1.3",
        "task": {"name": spec.task_name, "description": spec.summary, "keywords": keywords},
        "metadata": metadata,
        "verifier": {
            "timeout_sec": verifier_timeout(spec),
            "user": VERIFIER_USER,
            "network_mode": "no-network",
        },
        "agent": {
            "timeout_sec": float(spec.agent_timeout_sec),
            "user": AGENT_USER,
            "network_mode": "no-network",
        },
        "environment": {
            "build_timeout_sec": 600.0,
            "cpus": CPUS,
            "memory_mb": MEMORY_MB,
            "network_mode": "no-network",
        },
    }


def render_task_toml(data: Mapping[str, Any]) -> str:
    """task.toml text: scalars of each table first, then its sub-tables, in the given order."""
    lines = [
        "# A FrontierSmith task, written by atoll.frontiersmith.bundle.",
        "# metadata.bundle_hash binds every file of the bundle (see atoll.checker.layout).",
    ]
    lines += _table([], data)
    return "\n".join(lines).strip() + "\n"


def _table(path: list[str], table: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    tables = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    if path and (scalars or not tables):
        lines += ["", f"[{'.'.join(path)}]"]
    lines += [f"{key} = {_value(value)}" for key, value in scalars.items()]
    for key, sub in tables.items():
        lines += _table([*path, key], sub)
    return lines


def _value(value: Scalar | list[Scalar]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        # JSON's escapes are TOML's; TOML also wants DEL escaped.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to task.toml")
