"""`transfer compare A B`: refuse what is not comparable, then count and test.

The manifests are checked first: both completed, their files unchanged, and
every binding field equal (suite digest, selection, fan-out, sandbox image,
evaluator/scorer/tool hashes, expected rows). Only then are rows read:
descriptive counts and Fisher's exact test per task and overall. A decision
is printed only when B's manifest fixed an acceptance rule before sampling;
otherwise the comparison is descriptive and says so.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from atoll.euler import rows, stats
from atoll.euler.transfer import manifest as manifests
from atoll.euler.transfer.manifest import ManifestError

NO_RULE = "no acceptance rule was fixed before sampling: descriptive comparison only, no promotion decision"


def mismatches(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    left, right = manifests.binding(a), manifests.binding(b)
    found = []
    for key in manifests.BINDING:
        if left[key] != right[key]:
            if isinstance(left[key], dict) and isinstance(right[key], dict):
                for sub in sorted(set(left[key]) | set(right[key])):
                    if left[key].get(sub) != right[key].get(sub):
                        found.append(
                            f"{key}.{sub}: {left[key].get(sub)!r} vs {right[key].get(sub)!r}"
                        )
            else:
                found.append(f"{key}: {left[key]!r} vs {right[key]!r}")
    return found


def _scored(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows.latest_per_attempt(data) if r.get("status") == "scored"]


def _counts(data: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in data:
        cell = cells[str(row.get("problem"))]
        cell[0] += 1
        cell[1] += bool(row.get("passed"))
    return {task: (n, c) for task, (n, c) in cells.items()}


def compare(path_a: Path, path_b: Path) -> dict[str, Any]:
    """The comparison, or ManifestError before anything is computed."""
    dir_a, a = manifests.load(path_a)
    dir_b, b = manifests.load(path_b)
    for label, data in (("A", a), ("B", b)):
        if data.get("status") != "completed":
            raise ManifestError(
                f"{label}: the transfer run is not completed (status {data.get('status')!r})"
            )
    found = mismatches(a, b)
    if found:
        raise ManifestError("the manifests are not comparable: " + "; ".join(found))
    manifests.verify_completed(dir_a, a, "A")
    manifests.verify_completed(dir_b, b, "B")
    counts_a = _counts(_scored(rows.read(dir_a / rows.ROWS_FILE)))
    rows_b = rows.read(dir_b / rows.ROWS_FILE)
    counts_b = _counts(_scored(rows_b))
    tasks = []
    for task in a["selection"]:
        n_a, c_a = counts_a.get(task, (0, 0))
        n_b, c_b = counts_b.get(task, (0, 0))
        tasks.append(_line(task, n_a, c_a, n_b, c_b))
    total_a = (sum(n for n, _ in counts_a.values()), sum(c for _, c in counts_a.values()))
    total_b = (sum(n for n, _ in counts_b.values()), sum(c for _, c in counts_b.values()))
    overall = _line("overall", total_a[0], total_a[1], total_b[0], total_b[1])
    return {
        "a": {"dir": str(dir_a), "model": a.get("model")},
        "b": {"dir": str(dir_b), "model": b.get("model")},
        "tasks": tasks,
        "overall": overall,
        "decision": _decision(b, overall, rows_b),
    }


def _line(task: str, n_a: int, c_a: int, n_b: int, c_b: int) -> dict[str, Any]:
    line: dict[str, Any] = {
        "task": task,
        "a": {"attempts": n_a, "passes": c_a, "pass_fraction": c_a / n_a if n_a else None},
        "b": {"attempts": n_b, "passes": c_b, "pass_fraction": c_b / n_b if n_b else None},
    }
    if n_a and n_b:
        result = stats.fisher(c_a, n_a, c_b, n_b)
        line["delta"] = c_b / n_b - c_a / n_a
        line["fisher"] = {
            "odds_ratio": result.odds_ratio,
            "p_two_sided": result.p_two_sided,
            "p_b_greater": result.p_b_greater,
        }
    return line


def _decision(
    b: dict[str, Any], overall: dict[str, Any], sampled: list[dict[str, Any]]
) -> dict[str, Any]:
    acceptance = b.get("acceptance")
    if not acceptance or not _fixed_before_sampling(b, sampled):
        return {"rule": None, "verdict": None, "text": NO_RULE}
    rule = acceptance["rule"]
    delta = overall.get("delta")
    p = (overall.get("fisher") or {}).get("p_b_greater")
    accepted = (
        delta is not None and p is not None and delta >= rule["min_delta"] and p <= rule["alpha"]
    )
    verdict = "promote" if accepted else "do not promote"
    text = (
        f"acceptance rule fixed at {acceptance['fixed_at']} (before sampling): B - A >= "
        f"{rule['min_delta']} and one-sided Fisher p <= {rule['alpha']}; observed delta "
        f"{delta:+.3f}, p = {p:.4g}: {verdict}"
        if delta is not None and p is not None
        else f"acceptance rule fixed before sampling, but a run has no attempts: {verdict}"
    )
    return {"rule": rule, "verdict": verdict, "text": text}


def _fixed_before_sampling(manifest: dict[str, Any], sampled: list[dict[str, Any]]) -> bool:
    import hashlib

    from atoll.core.durable import canonical_json

    acceptance = manifest.get("acceptance") or {}
    rule = acceptance.get("rule")
    if not isinstance(rule, dict):
        return False
    if hashlib.sha256(canonical_json(rule)).hexdigest() != acceptance.get("rule_sha256"):
        return False
    fixed, started = acceptance.get("fixed_at"), manifest.get("sampling_started_at")
    if not (isinstance(fixed, str) and isinstance(started, str) and fixed <= started):
        return False
    # Every row was written under this rule (each carries its hash) and after it was fixed.
    return all(
        row.get("acceptance_rule_sha256") == acceptance.get("rule_sha256")
        and str(row.get("created_at") or "") >= fixed
        for row in sampled
    )


def markdown(result: dict[str, Any]) -> str:
    def frac(side: dict[str, Any]) -> str:
        value = side["pass_fraction"]
        return f"{side['passes']}/{side['attempts']}" + ("" if value is None else f" ({value:.3f})")

    lines = [
        "| task | A | B | B - A | odds ratio | Fisher p (two-sided) | p (B > A) |",
        "|---|---|---|---|---|---|---|",
    ]
    for line in [*result["tasks"], result["overall"]]:
        fisher = line.get("fisher")
        cells = [
            line["task"],
            frac(line["a"]),
            frac(line["b"]),
            "—" if "delta" not in line else f"{line['delta']:+.3f}",
            "—" if not fisher else f"{fisher['odds_ratio']:.3g}",
            "—" if not fisher else f"{fisher['p_two_sided']:.4g}",
            "—" if not fisher else f"{fisher['p_b_greater']:.4g}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", result["decision"]["text"]]
    return "\n".join(lines) + "\n"
