"""Markdown summaries and PNG plots, recomputed from raw rows every time.

Only scored rows count as attempts; rows whose rollout failed for
infrastructure reasons (provider down, container failure) are counted and
listed apart, never as failed attempts. A disqualified trajectory (the path
audit) is a scored attempt that failed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.euler import stats

DIMENSIONS = ("problem", "language", "approach", "phase")
DEFAULT_KS = (1, 5, 10)


@dataclass
class GroupStats:
    label: str
    attempts: int
    passes: int
    executed: int
    disqualified: int
    errors: int
    latencies: list[float]
    tasks: list[tuple[int, int]]  # (n, c) per problem x language x approach x phase

    @property
    def pass_fraction(self) -> float | None:
        return self.passes / self.attempts if self.attempts else None

    @property
    def execution_rate(self) -> float | None:
        return self.executed / self.attempts if self.attempts else None

    def pass_at(self, k: int) -> float | None:
        return stats.mean_pass_at_k(self.tasks, k)

    def pass_at_cell(self, k: int) -> str:
        """pass@k over the cells with at least k attempts; cells with fewer are shown with
        their n (and their pass@n), never dropped."""
        text = _fmt(self.pass_at(k))
        short = [(n, c) for n, c in self.tasks if 0 < n < k]
        if not short:
            return text
        sizes = ",".join(str(n) for n in sorted({n for n, _ in short}))
        at_n = sum(stats.pass_at_k(n, c, n) for n, c in short) / len(short)
        cells = "1 cell" if len(short) == 1 else f"{len(short)} cells"
        return f"{text} ({cells} with n={sizes} < {k}: pass@n {_fmt(at_n)})"


def scored(row: dict[str, Any]) -> bool:
    return row.get("status") == "scored"


def _task(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(row.get("problem")),
        str(row.get("language")),
        str(row.get("approach")),
        str(row.get("phase")),
    )


def group(rows: Sequence[dict[str, Any]], label: str) -> GroupStats:
    counts: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    attempts = passes = executed = disqualified = errors = 0
    latencies: list[float] = []
    for row in rows:
        if not scored(row):
            errors += 1
            continue
        attempts += 1
        ok = bool(row.get("passed"))
        passes += ok
        executed += bool(row.get("executed"))
        disqualified += bool(row.get("disqualified"))
        if isinstance(row.get("latency_s"), int | float):
            latencies.append(float(row["latency_s"]))
        cell = counts[_task(row)]
        cell[0] += 1
        cell[1] += ok
    return GroupStats(
        label,
        attempts,
        passes,
        executed,
        disqualified,
        errors,
        latencies,
        [(n, c) for n, c in counts.values()],
    )


def _sort_key(value: str) -> tuple[int, int | str]:
    return (0, int(value)) if value.isdigit() else (1, value)


def by(rows: Sequence[dict[str, Any]], dimension: str) -> list[GroupStats]:
    buckets: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        buckets[str(row.get(dimension))].append(row)
    return [group(buckets[key], key) for key in sorted(buckets, key=_sort_key)]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(title: str, groups: list[GroupStats], ks: Sequence[int]) -> list[str]:
    head = [
        "",
        title,
        "attempts",
        "passes",
        "pass fraction",
        *[f"pass@{k}" for k in ks],
        "execution rate",
        "disqualified",
        "median latency (s)",
        "infrastructure errors",
    ]
    lines = ["| " + " | ".join(head[1:]) + " |", "|" + "---|" * (len(head) - 1)]
    for g in groups:
        cells = [
            g.label,
            str(g.attempts),
            str(g.passes),
            _fmt(g.pass_fraction),
            *[g.pass_at_cell(k) for k in ks],
            _fmt(g.execution_rate),
            str(g.disqualified),
            _fmt(stats.median(g.latencies), 1),
            str(g.errors),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(
    rows: Sequence[dict[str, Any]],
    *,
    title: str = "Pi on Project Euler",
    ks: Sequence[int] = DEFAULT_KS,
    notes: Sequence[str] = (),
    plots: Sequence[tuple[str, str]] = (),
) -> str:
    """The whole summary as Markdown."""
    overall = group(rows, "all")
    signatures = sorted(
        {str(r.get("model_signature", ""))[:12] for r in rows if r.get("model_signature")}
    )
    models = sorted({str(r.get("model")) for r in rows if r.get("model")})
    lines = [f"# {title}", ""]
    lines.append(
        f"{len(rows)} rows: {overall.attempts} scored attempts, {overall.passes} passed, "
        f"{overall.errors} infrastructure errors (not counted as attempts)."
    )
    if models:
        lines.append(f"Model: {', '.join(models)}; signature {', '.join(signatures)}.")
    lines += [
        "",
        "pass fraction = passes / scored attempts. pass@k is the unbiased estimator "
        "1 - C(n-c, k)/C(n, k) per problem x language x approach x phase cell, averaged over "
        "the cells with at least k attempts (— when none has); cells with fewer than k "
        "attempts are shown beside it with their n and their pass@n. Infrastructure errors "
        "are counted in their own column, never as attempts. Execution rate = attempts whose "
        "written program was run as `RUNTIME FILE`. A disqualified attempt (path audit) counts "
        "as failed.",
        "",
    ]
    for note in notes:
        lines += [note, ""]
    lines += ["## Overall", "", *_table("", [overall], ks), ""]
    for dimension in DIMENSIONS:
        groups = by(rows, dimension)
        lines += [f"## By {dimension}", "", *_table(dimension, groups, ks), ""]
    failures = _failed_conditions(rows)
    if failures:
        lines += ["## Failed gate conditions", "", "| condition | attempts |", "|---|---|"]
        lines += [f"| {name} | {count} |" for name, count in failures]
        lines.append("")
    errors = [r for r in rows if not scored(r)]
    if errors:
        lines += ["## Infrastructure errors", ""]
        for row in errors[:50]:
            lines.append(
                f"- problem {row.get('problem')} {row.get('language')}/{row.get('approach')} "
                f"sample {row.get('sample')}: {row.get('error')}"
            )
        lines.append("")
    for caption, path in plots:
        lines += [f"![{caption}]({path})", ""]
    return "\n".join(lines).rstrip() + "\n"


def _failed_conditions(rows: Sequence[dict[str, Any]]) -> list[tuple[str, int]]:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        if scored(row):
            for name in (row.get("gate") or {}).get("failed") or []:
                counts[name] += 1
            if row.get("disqualified"):
                counts["path_audit"] += 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def plot(rows: Sequence[dict[str, Any]], out: Path) -> list[tuple[str, str]]:
    """pass_rate.png (by problem and language) and latency.png; (caption, file name) pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    made: list[tuple[str, str]] = []
    attempts = [r for r in rows if scored(r)]
    if not attempts:
        return made
    problems = sorted({str(r.get("problem")) for r in attempts}, key=_sort_key)
    languages = sorted({str(r.get("language")) for r in attempts})
    width = 0.8 / max(len(languages), 1)
    fig, ax = plt.subplots(figsize=(min(max(6, 0.6 * len(problems) + 2), 20), 4))
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in attempts:
        cell = cells[(str(r.get("problem")), str(r.get("language")))]
        cell[0] += 1
        cell[1] += bool(r.get("passed"))
    for index, language in enumerate(languages):
        values = [
            cells[(p, language)][1] / cells[(p, language)][0] if cells[(p, language)][0] else 0.0
            for p in problems
        ]
        positions = [i + index * width - 0.4 + width / 2 for i in range(len(problems))]
        ax.bar(positions, values, width, label=language)
    step = max(1, len(problems) // 40)  # at most about 40 labels
    ax.set_xticks(range(0, len(problems), step), problems[::step], rotation=90 if step > 1 else 0)
    ax.set_ylim(0, 1)
    ax.set_xlabel("problem")
    ax.set_ylabel("pass fraction")
    ax.set_title("Pass fraction by problem and language")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "pass_rate.png", dpi=100)
    plt.close(fig)
    made.append(("pass fraction by problem and language", "pass_rate.png"))

    latencies = {
        lang: [
            float(r["latency_s"])
            for r in attempts
            if r.get("language") == lang and isinstance(r.get("latency_s"), int | float)
        ]
        for lang in languages
    }
    if any(latencies.values()):
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.hist([v for v in latencies.values()], bins=20, label=list(latencies), stacked=False)
        ax.set_xlabel("latency per rollout (s)")
        ax.set_ylabel("rollouts")
        ax.set_title("Latency distribution")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "latency.png", dpi=100)
        plt.close(fig)
        made.append(("latency distribution", "latency.png"))
    return made


def write(
    rows: Sequence[dict[str, Any]],
    out: Path,
    *,
    title: str = "Pi on Project Euler",
    ks: Sequence[int] = DEFAULT_KS,
    notes: Sequence[str] = (),
    name: str = "summary.md",
    plots: bool = True,
) -> str:
    """Write the plots (unless `plots` is False) and the Markdown summary; the Markdown."""
    from atoll.core.durable import atomic_write_text

    made = plot(rows, out) if plots else []
    text = markdown(rows, title=title, ks=ks, notes=notes, plots=made)
    atomic_write_text(out / name, text, make_parents=True)
    return text
