"""The verifier of atoll's discovery tasks: run the candidate, recompute its objective, write the reward.

One file on purpose: every discovery task carries a byte-for-byte copy as
`tests/verify.py`, beside `tests/grader.py` (atoll-checker's grader, whose
`Sandbox` runs the candidate) and `tests/problem.json` (which problem, its
size and the candidate's limits); `tests/test.sh` runs it as root in the
verifier phase with the image's `python3`. On the host it is
`atoll.discovery.verify`, the same code. It needs the standard library and
numpy, nothing else.

What it does, in order:

1. Locks `tests/`, the output directory and every `--lock` directory (mode
   0700) while anything of the candidate can run, and removes stale reward
   files.
2. Copies the candidate (a regular file of at most `source_bytes`) and runs it
   once, as `python3 -I solution.py` in an empty directory, as an unused
   unprivileged uid, with no network, no input, an environment of PATH and
   LANG only, and the problem's limits (CPU seconds, wall clock, address
   space, processes, output sizes): the grader's `Sandbox`.
3. Reads its standard output as one JSON object and recomputes the objective
   from the construction in it, exactly as the problem defines it (the
   `objective_*` functions below; each task's instruction states the same).
4. Writes `result.json` (status, message, objective, reward, the run's
   figures) and then `reward.json`, each atomically: `{"reward": R,
   "raw_score": S}` for a valid construction, `{"reward": 0.0}` otherwise.

A candidate that is missing, crashes, runs past a limit, prints something
that is not the construction, or prints an invalid construction scores 0:
that is the candidate's failure. A verifier that cannot verify (numpy missing
for the candidate's python3, a broken problem.json, a sandbox that cannot
start) writes no reward file and exits 2: an error, never a score.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import hashlib
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

# The five problems and their construction's key in the candidate's JSON object.
ERDOS = "erdos_min_overlap"
AC1 = "autocorrelation_ac1"
AC2 = "autocorrelation_ac2"
CIRCLES = "circle_packing"
KEYS = {ERDOS: "h", AC1: "heights", AC2: "heights", CIRCLES: "circles"}
OBJECTIVES = {ERDOS: "C5", AC1: "AC1 bound", AC2: "AC2 bound", CIRCLES: "sum of radii"}

MAX_VALUES = 100_000  # the longest step function accepted (h, heights)
TOLERANCE = 1e-12  # circle packing: how far a circle may cross the square's edge or another
REWARD_EPSILON = 1e-8  # the reciprocal rewards' guard, as in the reference
AC1_REWARD_SCALE = 5.0  # the reference's scaled reciprocal reward for AC1

PROBLEM_FILE = "problem.json"
REWARD_FILE = "reward.json"
RESULT_FILE = "result.json"
OUTPUT_FILES = (REWARD_FILE, RESULT_FILE)
NUMPY_PROBE_SECONDS = 60.0
SUMMARY_CHARS = 240  # of the message on the summary line (result.json keeps it whole)
PR_SET_CHILD_SUBREAPER = 36


class Invalid(ValueError):
    """The construction breaks the problem's rules: the candidate scores 0."""


class VerifierError(RuntimeError):
    """The verifier cannot verify here: an infrastructure error, never a score."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A valid construction's objective (the raw score) and the reward it earns."""

    raw_score: float
    reward: float


# --- the objectives -------------------------------------------------------------------------


def numbers(value: Any, what: str, *, limit: int = MAX_VALUES) -> npt.NDArray[np.float64]:
    """A non-empty JSON list of finite numbers (no booleans) as float64, or Invalid."""
    if not isinstance(value, list):
        raise Invalid(f"{what} must be a list of numbers, not {type(value).__name__}")
    if not value:
        raise Invalid(f"{what} is empty")
    if len(value) > limit:
        raise Invalid(f"{what} has {len(value)} values; at most {limit} are accepted")
    for index, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise Invalid(f"{what}[{index}] is {item!r}, not a number")
    try:
        array = np.asarray(value, dtype=np.float64)
    except OverflowError:
        raise Invalid(f"{what} holds an integer too large for a float") from None
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise Invalid(f"{what}[{bad[0]}] is {array[bad[0]]!r}, not a finite number")
    return array


def objective_erdos(h_values: Any) -> float:
    """Erdős' minimum overlap: the C5 bound of the step function h on [0, 2].

    h holds n samples in [0, 1]; it is rescaled so that sum(h) = n/2 (the
    integral of h is 1) and must still lie in [0, 1]; then, with dx = 2/n,
    C5 = max over all shifts k of dx * sum_i h[i] * (1 - h[i + k]), the
    full correlation of h with 1 - h (both zero outside [0, 2]).
    """
    h = numbers(h_values, "h")
    if np.any(h < 0) or np.any(h > 1):
        raise Invalid(f"h must lie in [0, 1]; it ranges over [{h.min()!r}, {h.max()!r}]")
    n = h.size
    total = float(np.sum(h))
    if total <= 0:
        raise Invalid("h is 0 everywhere; its integral must be 1 after rescaling")
    target = n / 2.0
    if total != target:
        h = h * (target / total)
        if np.any(h < 0) or np.any(h > 1):
            raise Invalid(
                f"after rescaling to sum(h) = n/2, h leaves [0, 1]: it reaches {h.max()!r}"
            )
    correlation = np.correlate(h, 1.0 - h, mode="full") * (2.0 / n)
    return float(np.max(correlation))


def _nonnegative_heights(values: Any) -> npt.NDArray[np.float64]:
    """Heights of a non-negative step function, divided by the largest (the ratios do not change)."""
    a = numbers(values, "heights")
    if np.any(a < 0):
        index = int(np.flatnonzero(a < 0)[0])
        raise Invalid(f"heights[{index}] is {a[index]!r}; every height must be >= 0")
    top = float(np.max(a))
    if top <= 0:
        raise Invalid("heights are 0 everywhere; their sum must be positive")
    return a / top


def objective_ac1(heights: Any) -> float:
    """The first autocorrelation inequality's bound: 2n * max(a * a) / (sum a)^2."""
    a = _nonnegative_heights(heights)
    n = a.size
    return float(2 * n * np.max(np.convolve(a, a)) / float(np.sum(a)) ** 2)


def objective_ac2(heights: Any) -> float:
    """The second autocorrelation inequality's bound: ||g||_2^2 / (||g||_1 ||g||_inf), g = f * f.

    g's values are c = a * a (2n - 1 of them), placed at the inner points of
    2n equal intervals over [-1/2, 1/2] with g = 0 at both ends, and g is the
    piecewise-linear function through them: ||g||_2^2 sums the exact integral
    h/3 (y1^2 + y1 y2 + y2^2) over the intervals (h = 1/(2n)), ||g||_1 is
    sum(|c|) / (2n) and ||g||_inf is max(|c|).
    """
    a = _nonnegative_heights(heights)
    c = np.convolve(a, a)
    width = 1.0 / (c.size + 1)
    y = np.concatenate(([0.0], c, [0.0]))
    left, right = y[:-1], y[1:]
    l2_squared = float(np.sum(left * left + left * right + right * right)) * width / 3.0
    l1 = float(np.sum(np.abs(c))) / (c.size + 1)
    linf = float(np.max(np.abs(c)))
    return l2_squared / (l1 * linf)


def objective_circles(circles: Any, count: int) -> float:
    """The sum of the radii of `count` disjoint circles inside the unit square.

    Each circle is [x, y, r] with r >= 0; it must lie in [0, 1]^2 and no two
    may overlap, each within TOLERANCE: x - r >= -TOLERANCE, x + r <= 1 +
    TOLERANCE (and so for y), and dist(i, j) >= r_i + r_j - TOLERANCE.
    """
    if not isinstance(circles, list) or len(circles) != count:
        size = len(circles) if isinstance(circles, list) else type(circles).__name__
        raise Invalid(f"circles must be a list of exactly {count} [x, y, r], not {size}")
    for index, circle in enumerate(circles):
        if not isinstance(circle, list) or len(circle) != 3:
            raise Invalid(f"circles[{index}] is {circle!r:.80}, not [x, y, r]")
    flat = numbers([value for circle in circles for value in circle], "circles", limit=3 * count)
    x, y, r = flat[0::3], flat[1::3], flat[2::3]
    if np.any(r < 0):
        index = int(np.flatnonzero(r < 0)[0])
        raise Invalid(f"circle {index} has a negative radius {r[index]!r}")
    outside = (x - r < -TOLERANCE) | (x + r > 1 + TOLERANCE)
    outside |= (y - r < -TOLERANCE) | (y + r > 1 + TOLERANCE)
    if np.any(outside):
        i = int(np.flatnonzero(outside)[0])
        raise Invalid(f"circle {i} (x={x[i]!r}, y={y[i]!r}, r={r[i]!r}) leaves the unit square")
    dx = x[:, None] - x[None, :]
    dy = y[:, None] - y[None, :]
    distance = np.sqrt(dx * dx + dy * dy)
    overlap = distance < r[:, None] + r[None, :] - TOLERANCE
    np.fill_diagonal(overlap, False)
    if np.any(overlap):
        i, j = (int(v) for v in np.argwhere(overlap)[0])
        depth = r[i] + r[j] - distance[i, j]
        raise Invalid(f"circles {i} and {j} overlap by {depth!r}")
    return float(np.sum(r))


def evaluate(problem: dict[str, Any], output: Any) -> Verdict:
    """The objective and reward of the construction a candidate printed, or Invalid."""
    name = problem["problem"]
    if not isinstance(output, dict) or KEYS[name] not in output:
        raise Invalid(f"the output must be a JSON object with the key {KEYS[name]!r}")
    value = output[KEYS[name]]
    if name == ERDOS:
        c5 = objective_erdos(value)
        return Verdict(c5, 1.0 / (REWARD_EPSILON + c5))
    if name == AC1:
        bound = objective_ac1(value)
        return Verdict(bound, AC1_REWARD_SCALE / (REWARD_EPSILON + bound))
    if name == AC2:
        bound = objective_ac2(value)
        return Verdict(bound, bound)
    total = objective_circles(value, int(problem["circles"]))
    return Verdict(total, total)


# --- the problem file -----------------------------------------------------------------------


def load_problem(tests_dir: Path, grader: ModuleType) -> tuple[dict[str, Any], Any]:
    """problem.json, checked, and the candidate's limits (the grader's `Limits`)."""
    path = tests_dir / PROBLEM_FILE
    try:
        problem = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VerifierError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(problem, dict) or problem.get("problem") not in KEYS:
        raise VerifierError(f"{path}: 'problem' must be one of {', '.join(KEYS)}")
    if problem["problem"] == CIRCLES and not (
        isinstance(problem.get("circles"), int) and problem["circles"] > 0
    ):
        raise VerifierError(f"{path}: a circle packing needs 'circles', a positive integer")
    try:
        limits = grader.Limits(**problem.get("limits", {}))
    except (TypeError, grader.CheckerError) as exc:
        raise VerifierError(f"{path}: limits: {exc}") from None
    return problem, limits


def load_grader(here: Path | None = None) -> ModuleType:
    """The grader the task carries beside this file, else atoll-checker's (on the host)."""
    carried = (here or Path(__file__).resolve().parent) / "grader.py"
    if carried.is_file():
        spec = importlib.util.spec_from_file_location("discovery_grader", carried)
        if spec is None or spec.loader is None:
            raise VerifierError(f"{carried}: cannot be loaded")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up by name
        spec.loader.exec_module(module)
        return module
    from atoll.checker import grader

    return grader


# --- running the candidate ------------------------------------------------------------------


def check_numpy(python: str, grader: ModuleType) -> None:
    """The candidate's python3 imports numpy, or the environment (not the candidate) is at fault."""
    try:
        probe = subprocess.run(
            [python, "-I", "-c", "import numpy"],
            env=grader.CHILD_ENV,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=NUMPY_PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise VerifierError(f"cannot run {python}: {exc}") from None
    if probe.returncode != 0:
        raise VerifierError(
            f"{python} cannot import numpy, which every candidate may use: install it in "
            "the task's image, or on the host for atoll-local (`apt-get install python3-numpy`)"
        )


def verify(
    problem: dict[str, Any], limits: Any, submission: Path, grader: ModuleType
) -> dict[str, Any]:
    """Run the candidate once and judge what it printed: the result's fields."""
    accepted = grader.read_submission(submission, limits.source_bytes)
    result: dict[str, Any] = {
        "problem": problem["problem"],
        "submission": accepted.to_json(),
        "limits": limits.to_json(),
    }
    if not accepted.accepted:
        return result | {"status": "missing", "message": accepted.reason}
    with grader.Sandbox(accepted, limits) as sandbox:
        check_numpy(sandbox.python, grader)
        run = sandbox.run(b"")
    result["run"] = {"status": run.status, "wall_seconds": run.wall_seconds}
    result["run"]["cpu_seconds"] = run.cpu_seconds
    if run.status != grader.OK:
        return result | {"status": run.status, "message": run.detail}
    output, why = grader.parse_output(run.stdout)
    if output is None:
        return result | {"status": "malformed", "message": why}
    try:
        verdict = evaluate(problem, output)
    except Invalid as exc:
        return result | {"status": "invalid", "message": str(exc)}
    if not (math.isfinite(verdict.raw_score) and math.isfinite(verdict.reward)):
        return result | {"status": "invalid", "message": f"the objective is {verdict.raw_score}"}
    return result | {
        "status": "valid",
        "message": f"{OBJECTIVES[problem['problem']]} {verdict.raw_score!r}",
        "raw_score": verdict.raw_score,
        "reward": verdict.reward,
    }


# --- outputs --------------------------------------------------------------------------------


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    """`data` as JSON at `path`: temporary file, fsync, rename, directory fsync."""
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_outputs(out_dir: Path, result: dict[str, Any]) -> str:
    """result.json, then reward.json (Harbor reads it); the one-line summary to print."""
    valid = result["status"] == "valid"
    rewards = {"reward": result["reward"], "raw_score": result["raw_score"]} if valid else {}
    result = {"reward": 0.0, **result}
    write_atomic(out_dir / RESULT_FILE, result)
    write_atomic(out_dir / REWARD_FILE, rewards or {"reward": 0.0})
    message = " ".join(str(result["message"]).split())  # one line: a crash's stderr has many
    if len(message) > SUMMARY_CHARS:
        message = message[: SUMMARY_CHARS - 3] + "..."
    if valid:
        return f"valid: {message} (reward {result['reward']!r})"
    return f"{result['status']}: {message} (reward 0)"


# --- command line ---------------------------------------------------------------------------


def become_subreaper() -> None:
    """Orphans of the candidate become this process's children, so that it can reap them."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run(
    tests_dir: Path,
    submission: Path,
    out_dir: Path,
    lock: Sequence[Path] = (),
    *,
    load: Callable[[], ModuleType] = load_grader,
) -> str:
    """Verify `submission` with the task in `tests_dir`; the summary line (VerifierError: none)."""
    grader = load()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in OUTPUT_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out_dir / name)
    private = list(dict.fromkeys([tests_dir, *lock, out_dir]))
    try:
        with grader.locked(private):
            problem, limits = load_problem(tests_dir, grader)
            result = verify(problem, limits, submission, grader)
            result["verifier_sha256"] = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
            return write_outputs(out_dir, result)
    except grader.CheckerError as exc:
        raise VerifierError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="verify.py", description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=Path, required=True, help="the task's tests/ directory")
    parser.add_argument("--submission", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="where reward.json goes")
    parser.add_argument("--lock", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    become_subreaper()
    try:
        print(run(args.tests.absolute(), args.submission, args.out, args.lock))
    except VerifierError as exc:
        print(f"verifier error: {exc}; no reward written", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
