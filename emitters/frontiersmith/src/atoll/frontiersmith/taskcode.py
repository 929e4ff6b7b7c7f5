"""A candidate's private files, and the grader's own checks of them run in the sandbox.

The generator, scorer and validator are model-written code, so they never
run in this process: the checks that drive construction repairs run the
grader that ships in every bundle (`atoll.checker.grader`, standard library
only) inside `atoll.core.sandbox` — no network, an unprivileged uid, CPU,
memory, process and wall-clock limits, only the candidate's files mounted
read-only. It is the same code, the same checks, that the task's verifier
runs before it grades anything, so a candidate that passes here cannot
fail its own self-check in a trial.

The contract's examples (a feasible output with its declared score, or
none, and an infeasible one, which the grader holds the validator and scorer
to) come from the generator's author: generator.py also defines `examples()`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.checker import Compile, Contract, grader_source
from atoll.checker import Limits as GradingLimits
from atoll.core.durable import atomic_write_bytes, atomic_write_json, atomic_write_text
from atoll.core.sandbox import Limits, Mount, Network, SandboxError, SandboxSpec, get_backend
from atoll.core.sizes import KiB, MiB

FILES = {"generator": "generator.py", "scorer": "scorer.py", "feasibility": "feasibility.py"}
SANDBOX_PYTHON = "/usr/bin/python3"
CHECK_LIMITS = Limits(
    cpu_seconds=240.0,
    wall_seconds=300.0,
    memory_bytes=2048 * MiB,
    processes=64,
    file_size_bytes=16 * MiB,
    open_files=256,
    stdout_bytes=4 * MiB,
    stderr_bytes=64 * KiB,
)

_EXAMPLES_PROBE = r"""
import json, sys
namespace = {"__name__": "_atoll_generator", "__file__": sys.argv[1]}
exec(compile(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1], "exec"), namespace)
make = namespace.get("examples")
if not callable(make):
    print(json.dumps({"error": "generator.py defines no function examples()"}))
    sys.exit(0)
try:
    value = make()
    print(json.dumps({"examples": value}, allow_nan=False))
except Exception as exc:
    print(json.dumps({"error": f"examples() raised {type(exc).__name__}: {str(exc)[:300]}"}))
"""


# The instances generate(seed) makes: what a trial graded, regenerated for repair evidence.
_INSTANCES_PROBE = r"""
import json, sys
namespace = {"__name__": "_atoll_generator", "__file__": sys.argv[1]}
exec(compile(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1], "exec"), namespace)
try:
    print(json.dumps({"instances": namespace["generate"](int(sys.argv[2]))}, allow_nan=False))
except Exception as exc:
    print(json.dumps({"error": f"generate raised {type(exc).__name__}: {str(exc)[:300]}"}))
"""


# What the scorer gives an empty answer (`{}`) on each instance of the contract's examples.
_EMPTY_ANSWER_PROBE = r"""
import json, sys
path, instances = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8"))
sys.path.insert(0, "/task/tests")
namespace = {"__name__": "_atoll_scorer", "__file__": path}
exec(compile(open(path, encoding="utf-8").read(), path, "exec"), namespace)
scores = []
for instance in instances:
    try:
        value = namespace["score"](instance, {})
        scores.append(value if isinstance(value, (int, float)) and not isinstance(value, bool) else None)
    except Exception:
        scores.append(None)
print(json.dumps({"scores": scores}))
"""


class CheckInfrastructureError(Exception):
    """The sandbox or the grader itself failed: not evidence about the candidate."""


@dataclass(frozen=True)
class TaskCode:
    generator: str
    scorer: str
    feasibility: str

    def files(self) -> dict[str, str]:
        return {"generator": self.generator, "scorer": self.scorer, "feasibility": self.feasibility}

    def replace(self, stage: str, code: str) -> TaskCode:
        return TaskCode(**{**self.files(), stage: code})


@dataclass(frozen=True)
class Finding:
    """One failed check, with the files it implicates (their authors get the evidence)."""

    check: str
    detail: str
    files: tuple[str, ...]

    def text(self) -> str:
        return f"{self.check}: {self.detail}"


def grading_seed(task_name: str) -> int:
    """A task's grading seed, fixed by its name (31 bits, so every generator takes it)."""
    return int.from_bytes(hashlib.sha256(task_name.encode()).digest()[:4], "big") >> 1


def judge_compile() -> Compile:
    """How a C++ task's grader builds a submission: the FrontierCS judge's own flags and
    compile limits (`atoll.judge.compiler`), so an emitted task compiles as the judge does."""
    from atoll.judge import COMPILE_LIMITS, FLAGS

    names = [f.name for f in dataclasses.fields(GradingLimits) if f.name != "source_bytes"]
    return Compile(FLAGS, GradingLimits(**{name: getattr(COMPILE_LIMITS, name) for name in names}))


def contract_json(task_name: str, examples: list[Any], language: str = "python") -> dict[str, Any]:
    """tests/contract.json: the grading seed from the task's name, the default limits, the
    examples, and for a C++ task the judge's compile settings."""
    seed = grading_seed(task_name)
    contract = Contract(
        seed=seed,
        check_seeds=(seed + 1, seed + 2, seed + 3),
        limits=GradingLimits(),
        language=language,
        compile=judge_compile() if language == "cpp" else None,
    )
    return contract.to_json() | {"examples": examples}


def write_tests(directory: Path, code: TaskCode, contract: dict[str, Any] | None) -> None:
    """The task's private files as the grader reads them (the grader itself included)."""
    directory.mkdir(parents=True, exist_ok=True)
    for stage, name in FILES.items():
        atomic_write_text(directory / name, code.files()[stage])
    if contract is not None:
        atomic_write_json(directory / "contract.json", contract)
    atomic_write_bytes(directory / "grader.py", grader_source())
    for path in directory.iterdir():
        path.chmod(0o644)  # readable by the sandbox's unprivileged uid


class SandboxedChecks:
    """The grader's checks of a candidate's code, each run in a fresh sandbox."""

    def __init__(self, backend: str = "bwrap") -> None:
        self.backend_name = backend

    def check_backend(self) -> None:
        try:
            get_backend(self.backend_name).check()
        except SandboxError as exc:
            raise CheckInfrastructureError(str(exc)) from None

    async def examples(self, code: TaskCode) -> tuple[list[Any], Finding | None]:
        """The generator's examples(), or a finding against the generator."""
        with tempfile.TemporaryDirectory(prefix="atoll-fs-examples-") as tmp:
            tests = Path(tmp) / "tests"
            write_tests(tests, code, None)
            tests.chmod(0o755)
            done = await self._run(
                [SANDBOX_PYTHON, "-I", "-c", _EXAMPLES_PROBE], tests, "generator.py"
            )
        try:
            answer = json.loads(done)
        except ValueError:
            return [], Finding(
                "examples", f"examples() printed no JSON: {done[:200]!r}", ("generator",)
            )
        if "error" in answer:
            return [], Finding("examples", str(answer["error"]), ("generator",))
        value = answer.get("examples")
        if not isinstance(value, list):
            return [], Finding(
                "examples", "examples() must return a list of objects", ("generator",)
            )
        return value, None

    async def instances(self, code: TaskCode, seed: int) -> list[Any]:
        """The instances `generate(seed)` makes (none when it fails: the checks say why)."""
        with tempfile.TemporaryDirectory(prefix="atoll-fs-instances-") as tmp:
            tests = Path(tmp) / "tests"
            write_tests(tests, code, None)
            tests.chmod(0o755)
            out = await self._run(
                [
                    SANDBOX_PYTHON,
                    "-I",
                    "-c",
                    _INSTANCES_PROBE,
                    "/task/tests/generator.py",
                    str(seed),
                ],
                tests,
                None,
            )
        try:
            value = json.loads(out).get("instances")
        except (ValueError, AttributeError):
            return []
        return value if isinstance(value, list) else []

    async def empty_answer_scores(self, code: TaskCode, examples: list[Any]) -> list[float]:
        """The scores, above 0 only, that the scorer gives an empty answer on the examples' instances.

        The no-op rule asks an empty answer to score exactly 0. The grader's
        self-check finds a scorer that breaks it only as one failure among
        others (the first it meets), so once repairs are exhausted this says
        whether the scorer still rewards an empty answer: then the candidate
        is rejected `noop_not_zero`, whichever check failed first.
        """
        instances = [e["instance"] for e in examples if isinstance(e, dict) and "instance" in e]
        if not instances:
            return []
        with tempfile.TemporaryDirectory(prefix="atoll-fs-empty-") as tmp:
            tests = Path(tmp) / "tests"
            write_tests(tests, code, None)
            atomic_write_json(tests / "instances.json", instances)
            (tests / "instances.json").chmod(0o644)
            tests.chmod(0o755)
            out = await self._run(
                [SANDBOX_PYTHON, "-I", "-c", _EMPTY_ANSWER_PROBE, "/task/tests/scorer.py"],
                tests,
                "instances.json",
            )
        try:
            scores = json.loads(out).get("scores") or []
        except (ValueError, AttributeError):
            return []  # the scorer does not even load: the self-check's findings say why
        return [float(v) for v in scores if v is not None and v == v and float(v) != 0.0]

    async def self_check(self, code: TaskCode, contract: dict[str, Any]) -> list[Finding]:
        """The grader's self-check of the files, fuzzed outputs included (the scorer and the
        validator must return a verdict on malformed outputs derived from each feasible
        example); each failure as a finding (empty: all pass)."""
        with tempfile.TemporaryDirectory(prefix="atoll-fs-check-") as tmp:
            tests = Path(tmp) / "tests"
            write_tests(tests, code, contract)
            tests.chmod(0o755)
            out = await self._run(
                [
                    SANDBOX_PYTHON,
                    "-I",
                    "/task/tests/grader.py",
                    "self-check",
                    "--tests",
                    "/task/tests",
                    "--json",
                    "--fuzz",
                ],
                tests,
                None,
            )
        try:
            checks = json.loads(out)
        except ValueError:
            raise CheckInfrastructureError(
                f"the grader's self-check printed no JSON: {out[-300:]!r}"
            ) from None
        return [finding(c["name"], c["detail"]) for c in checks if not c["ok"]]

    async def _run(self, argv: list[str], tests: Path, file_arg: str | None) -> str:
        if file_arg is not None:
            argv = [*argv, f"/task/tests/{file_arg}"]
        spec = SandboxSpec(
            mounts=(Mount(tests, "/task/tests"),),
            workdir="/tmp",
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"},
            network=Network.NONE,
            limits=CHECK_LIMITS,
        )
        backend = get_backend(self.backend_name)
        try:
            result = await asyncio.to_thread(backend.run, argv, spec)
        except SandboxError as exc:
            raise CheckInfrastructureError(f"the sandbox failed: {exc}") from None
        if not result.ok and not result.stdout.strip():
            tail = result.stderr.decode(errors="replace").strip()[-400:]
            return json.dumps(
                [{"name": "task code runs", "ok": False, "detail": f"{result.status}: {tail}"}]
                if file_arg is None
                else {"error": f"{result.status}: {tail}"}
            )
        return result.stdout.decode("utf-8", errors="replace")


def finding(check: str, detail: str) -> Finding:
    """Which authors a failed check concerns (the grader names the check and the file)."""
    lowered = f"{check} {detail}".lower()
    files: list[str] = []
    for stage, name in FILES.items():
        if name in lowered:
            files.append(stage)
    if not files:
        if "generator" in lowered:
            files.append("generator")
        if "validator" in lowered or "is_feasible" in lowered:
            files.append("feasibility")
        if "scorer" in lowered or "score(" in lowered or "score returned" in lowered:
            files.append("scorer")
        if "example" in lowered or "contract" in lowered:
            files.append("generator")
    return Finding(check, detail, tuple(dict.fromkeys(files or FILES)))
