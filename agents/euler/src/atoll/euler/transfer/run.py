"""`transfer run`: sample the frozen suite under a manifest written before the first rollout."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.euler import report, rows, writer
from atoll.euler.curriculum import Attempt
from atoll.euler.evaluate import Runner, Task, run_to_end
from atoll.euler.transfer import manifest as manifests
from atoll.euler.transfer import suite
from atoll.euler.transfer.manifest import AcceptanceRule, ManifestError

RUN_ID = "transfer"
PHASE = "transfer"


@dataclass
class TransferSource:
    tasks: dict[str, suite.TransferTask]

    def task(self, task_id: str) -> Task:
        task = self.tasks[task_id]
        return Task(task_id, f"Task: {task.title}", task.statement, dict(task.files))

    def expected(self, task_id: str) -> str:
        return self.tasks[task_id].expected()


def attempts(
    languages: tuple[str, ...], approaches: tuple[str, ...], samples: int
) -> list[Attempt]:
    return [
        Attempt(PHASE, task_id, language, approach, sample)  # type: ignore[arg-type]
        for task_id in suite.TASK_IDS
        for language in languages
        for approach in approaches
        for sample in range(samples)
    ]


def run(
    out: Path,
    runner: Runner,
    *,
    languages: tuple[str, ...],
    approaches: tuple[str, ...],
    samples: int,
    acceptance: AcceptanceRule | None,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Sample the suite into `out`; the completed manifest (ManifestError if it cannot complete)."""
    tasks = suite.verified()
    planned = attempts(languages, approaches, samples)
    image = runner.image_info or {}
    fresh = manifests.new(
        suite={"name": suite.SUITE_NAME, "digest": suite.SUITE_DIGEST},
        selection=list(suite.TASK_IDS),
        fanout={"languages": list(languages), "approaches": list(approaches), "samples": samples},
        sandbox_image={
            "tag": image.get("tag"),
            "image_id": image.get("image_id"),
            "runtimes": image.get("runtimes"),
        },
        run_limits=manifests.limits(runner.settings.pi),
        model={
            "name": runner.settings.pi.model,
            "signature": runner.settings.signature,
            "components": runner.settings.signature_parts,
        },
        expected_rows=len(planned),
        acceptance=acceptance,
    )
    current = _existing(out)
    if current is None:
        manifests.write(out, fresh)
        current = fresh
        say(
            f"manifest fixed before sampling: {out / manifests.MANIFEST_FILE}"
            + ("" if acceptance is None else f" (acceptance rule {acceptance.to_json()})")
        )
    else:
        differ = [
            k
            for k in (*manifests.BINDING, "model")
            if manifests.binding(current).get(k, current.get(k))
            != manifests.binding(fresh).get(k, fresh.get(k))
        ]
        fixed_rule = (current.get("acceptance") or {}).get("rule")
        if acceptance is not None and fixed_rule != acceptance.to_json():
            differ.append("acceptance (a rule can only be fixed before sampling starts)")
        if differ:
            raise ManifestError(
                f"{out} holds a transfer run with other settings ({', '.join(differ)}); use a new --out"
            )
        say(f"resuming the transfer run in {out}")
    acceptance_sha = (current.get("acceptance") or {}).get("rule_sha256")
    runner.settings.row_extra = {
        "acceptance_rule_sha256": acceptance_sha,
        "suite_digest": suite.SUITE_DIGEST,
    }
    runner.source = TransferSource(tasks)
    rows_path = out / rows.ROWS_FILE
    run_to_end(runner.run(planned, out, rows_path, RUN_ID))
    data = rows.read(rows_path)
    latest = {
        rows.attempt_key(r): r for r in rows.latest_per_attempt(data) if r.get("status") == "scored"
    }
    report.write(
        list(latest.values()),
        out,
        title="Frozen transfer evaluation",
        ks=(1,),
        notes=[f"Suite {suite.SUITE_NAME}, digest {suite.SUITE_DIGEST[:16]}."],
        name=manifests.SUMMARY_FILE,
    )
    if len(latest) != current["expected_rows"]:
        raise ManifestError(
            f"{current['expected_rows'] - len(latest)} attempts have no scored row (infrastructure "
            "errors); the manifest stays open: rerun the same command to retry them"
        )
    return manifests.complete(out, current, rows_path, len(latest))


def _existing(out: Path) -> dict[str, Any] | None:
    if not (out / manifests.MANIFEST_FILE).exists():
        if not writer.is_empty(out):
            raise ManifestError(
                f"{out} is not empty and holds no transfer manifest; use a new --out"
            )
        return None
    _, data = manifests.load(out)
    if data.get("status") == "completed":
        raise ManifestError(f"{out} holds a completed transfer run; use a new --out")
    return data
