"""Transfer manifests: what a transfer run bound itself to, before and after sampling.

Before the first rollout, `manifest.json` is written with status `sampling`:
the suite (name and pinned digest), the selection, the fan-out, the sandbox
image (tag and content ID), the run limits (turns, timeout, max tokens,
context window, command timeout, thinking level, system prompt hash), the
evaluator, scorer and tool hashes and the hash of every module that produces
a row or the summary, the model signature, the expected row count, and the
acceptance rule if one is given (with the time it was fixed). When every attempt is scored the manifest is
completed with the hashes of `rows.jsonl` and `summary.md`. Comparisons only
accept completed manifests whose files still match those hashes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json, canonical_json

MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.md"
FORMAT = 2
# What two runs must share to be compared (the model is what may differ).
BINDING = (
    "suite",
    "selection",
    "fanout",
    "sandbox_image",
    "limits",
    "hashes",
    "modules",
    "expected_rows",
)

EVALUATOR_MODULES = (
    "atoll.euler.commands.common",  # turns the run flags into the settings of every rollout
    "atoll.euler.evaluate",
    "atoll.euler.prompts",
    "atoll.euler.runtimes",
    "atoll.euler.record_input",
    "atoll.euler.transfer.suite",
    "atoll.pi.rollout",
    "atoll.pi.session",
    "atoll.pi.container",
    "atoll.pi.workspace",
    "atoll.pi.bridge",
    "atoll.pi.target",
    "atoll.pi.pi_config",
)
SCORER_MODULES = (
    "atoll.euler.gate",
    "atoll.euler.executions",
    "atoll.euler.answers",
    "atoll.pi.audit",
    "atoll.pi.audit_paths",
    "atoll.pi.audit_programs",
    "atoll.pi.audit_commands",
    "atoll.pi.audit_shell",
)
# What turns a rollout into its row and the rows into the summary.
RECORD_MODULES = (
    "atoll.pi.events",
    "atoll.pi.record",
    "atoll.pi.settings",
    "atoll.euler.rows",
    "atoll.euler.signature",
    "atoll.euler.curriculum",
    "atoll.euler.transfer.run",
    "atoll.euler.commands.transfer_run",  # the flags a transfer run is sampled under
    "atoll.euler.transfer.manifest",  # the limits and hashes a run is bound by
)
SUMMARY_MODULES = ("atoll.euler.report", "atoll.euler.stats")
MODULES = EVALUATOR_MODULES + SCORER_MODULES + RECORD_MODULES + SUMMARY_MODULES


class ManifestError(Exception):
    """A manifest that is missing, incomplete, tampered with or not comparable."""


def _source(name: str) -> bytes:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ManifestError(f"cannot hash {name}: module not found")
    return Path(spec.origin).read_bytes()


def sources_sha256(modules: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in modules:
        digest.update(name.encode() + b"\0" + _source(name) + b"\0")
    return digest.hexdigest()


def module_hashes() -> dict[str, str]:
    """The sha256 of each module that produces a row or the summary, by module name."""
    return {name: hashlib.sha256(_source(name)).hexdigest() for name in MODULES}


def limits(settings: Any) -> dict[str, Any]:
    """The run limits of Pi's settings that change what a rollout can do."""
    text = settings.system_prompt_text()
    return {
        "max_turns": settings.max_turns,
        "timeout_s": settings.timeout_s,
        "max_tokens": settings.max_tokens,
        "context_window": settings.context_window,
        "command_timeout_s": settings.command_timeout_s,
        "thinking": settings.thinking,
        "system_prompt_sha256": None
        if text is None
        else hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }


def tool_hashes() -> dict[str, str]:
    from atoll.pi.rollout import PI_VERSION, TOOLS, extension_sha256, lock_sha256

    return {
        "extension_sha256": extension_sha256(),
        "pi_version": PI_VERSION,
        "pi_lock_sha256": lock_sha256(),
        "tools": ",".join(TOOLS),
    }


def hashes() -> dict[str, str]:
    tools = tool_hashes()
    return {
        "evaluator": sources_sha256(EVALUATOR_MODULES),
        "scorer": sources_sha256(SCORER_MODULES),
        "tools": hashlib.sha256(canonical_json(tools)).hexdigest(),
        "record": sources_sha256(RECORD_MODULES),
        "summary": sources_sha256(SUMMARY_MODULES),
    }


@dataclass(frozen=True)
class AcceptanceRule:
    """Promote B over A when B's overall pass fraction exceeds A's by at least `min_delta`
    and the one-sided Fisher exact test (B > A) gives p <= `alpha`."""

    min_delta: float
    alpha: float

    @classmethod
    def parse(cls, text: str) -> AcceptanceRule:
        values: dict[str, float] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep:
                raise ManifestError(
                    f"--accept: {part!r} is not KEY=VALUE (e.g. min_delta=0.1,alpha=0.05)"
                )
            try:
                values[key.strip()] = float(value)
            except ValueError:
                raise ManifestError(f"--accept: {value!r} is not a number") from None
        unknown = set(values) - {"min_delta", "alpha"}
        if unknown or len(values) != 2:
            raise ManifestError("--accept needs exactly min_delta=D,alpha=A")
        if not -1 <= values["min_delta"] <= 1 or not 0 < values["alpha"] < 1:
            raise ManifestError("--accept: min_delta must lie in [-1, 1] and alpha in (0, 1)")
        return cls(values["min_delta"], values["alpha"])

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": "overall pass fraction, B minus A",
            "test": "one-sided Fisher exact test, B > A",
            "min_delta": self.min_delta,
            "alpha": self.alpha,
        }


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new(
    *,
    suite: dict[str, str],
    selection: list[str],
    fanout: dict[str, Any],
    sandbox_image: dict[str, Any],
    run_limits: dict[str, Any],
    model: dict[str, Any],
    expected_rows: int,
    acceptance: AcceptanceRule | None,
) -> dict[str, Any]:
    fixed = now()
    data: dict[str, Any] = {
        "format": FORMAT,
        "status": "sampling",
        "suite": suite,
        "selection": selection,
        "fanout": fanout,
        "sandbox_image": sandbox_image,
        "limits": run_limits,
        "hashes": hashes(),
        "modules": module_hashes(),
        "model": model,
        "expected_rows": expected_rows,
        "acceptance": None,
        "sampling_started_at": fixed,
    }
    if acceptance is not None:
        rule = acceptance.to_json()
        data["acceptance"] = {
            "rule": rule,
            "rule_sha256": hashlib.sha256(canonical_json(rule)).hexdigest(),
            "fixed_at": fixed,
        }
    return data


def binding(manifest: dict[str, Any]) -> dict[str, Any]:
    sandbox = dict(manifest.get("sandbox_image") or {})
    sandbox.pop("tag", None)  # the tag is a name; the content ID is what binds
    values = {key: manifest.get(key) for key in BINDING}
    values["sandbox_image"] = sandbox
    return values


def write(directory: Path, manifest: dict[str, Any]) -> None:
    atomic_write_json(directory / MANIFEST_FILE, manifest, make_parents=True)


def load(path: Path) -> tuple[Path, dict[str, Any]]:
    """(run directory, manifest) for a run directory or a manifest file."""
    file = path / MANIFEST_FILE if path.is_dir() else path
    try:
        return file.parent, json.loads(file.read_text("utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{file} does not exist: not a transfer run") from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{file} cannot be read: {exc}") from None


def file_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from None


def complete(
    directory: Path, manifest: dict[str, Any], rows_path: Path, scored_rows: int
) -> dict[str, Any]:
    done = dict(manifest)
    done.update(
        {
            "status": "completed",
            "completed_at": now(),
            "rows": scored_rows,
            "result_sha256": file_sha256(rows_path),
            "summary_sha256": file_sha256(directory / SUMMARY_FILE),
        }
    )
    write(directory, done)
    return done


def verify_completed(directory: Path, manifest: dict[str, Any], label: str) -> None:
    """A completed manifest whose rows and summary still hash as recorded."""
    from atoll.euler.rows import ROWS_FILE

    if manifest.get("status") != "completed":
        raise ManifestError(
            f"{label}: the transfer run is not completed (status {manifest.get('status')!r})"
        )
    if manifest.get("rows") != manifest.get("expected_rows"):
        raise ManifestError(
            f"{label}: {manifest.get('rows')} scored rows, but the manifest expected {manifest.get('expected_rows')}"
        )
    if file_sha256(directory / ROWS_FILE) != manifest.get("result_sha256"):
        raise ManifestError(
            f"{label}: {directory / ROWS_FILE} changed since its manifest was completed"
        )
    if file_sha256(directory / SUMMARY_FILE) != manifest.get("summary_sha256"):
        raise ManifestError(
            f"{label}: {directory / SUMMARY_FILE} changed since its manifest was completed"
        )
