"""The collection report: what a run produced, what it rejected and why, and what it cost.

`DIR/run.json` is the machine-readable record (accepted tasks with their
evidence, skipped seeds with their reasons, money from the ledger, worker
time from the receipts); `DIR/report.md` says the same for people, with
three plots under `DIR/plots/`: the yield funnel by stage, the rejection
reasons, and token cost and worker time per accepted task. Token cost is
what the ledger settled (plus what is still reserved for uncertain
requests, shown apart); worker cost is the wall time of the Harbor trials.
"""

from __future__ import annotations

import io
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_bytes, atomic_write_json, atomic_write_text
from atoll.core.ledger import OPEN_STATES, Ledger, Receipt, State, format_usd
from atoll.frontiersmith.lineage import of_outcome
from atoll.frontiersmith.outcome import FUNNEL, Status
from atoll.frontiersmith.report_rounds import (
    accepted_entry_extras,
    dropped_tasks,
    rounds_markdown,
    rounds_summary,
)
from atoll.frontiersmith.resend import is_rollout

PLOTS = ("funnel.png", "rejections.png", "cost_per_task.png")


def build_summary(
    *,
    run_id: str,
    stored: Mapping[str, Any],
    outcomes: Mapping[str, Mapping[str, Any]],
    seed_ids: Sequence[str],
    ledger: Ledger,
    stop: str,
    stop_detail: str,
    wall_seconds: float,
    round_records: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """run.json's content, from the journal, the ledger and the closed rounds' records.

    `seed_ids` are every round's seeds in order (`rounds.Rounds.seed_ids`).
    """
    ordered = [outcomes[s] for s in seed_ids if s in outcomes]
    accepted = [o for o in ordered if o["status"] == Status.ACCEPTED]
    rejected = [o for o in ordered if o["status"] == Status.REJECTED]
    errors = [o for o in ordered if o["status"] == Status.ERROR]
    receipts = ledger.receipts()
    invalid = sum(1 for r in receipts if (r.verdict or "").startswith("invalid"))
    tried = len(accepted) + len(rejected) + len(errors)  # every seed tried, errors included
    funnel = {stage: sum(1 for o in ordered if stage in o["reached"]) for stage in FUNNEL}
    config = dict(stored.get("config", {}))
    if not config.get("rollout_tasks"):
        funnel.pop("rollout")  # an optional stage this run did not ask for
    funnel = {"seeds": len(ordered), **funnel, "accepted": len(accepted)}
    dropped = dropped_tasks(round_records)
    return {
        "run_id": run_id,
        "fingerprint": stored.get("fingerprint"),
        "code_hash": stored.get("code_hash"),
        "config": config,
        "written_at": time.time(),
        "stop": {"reason": stop, "detail": stop_detail},
        "wall_seconds": round(wall_seconds, 3),
        "totals": {
            "seeds_available": len(seed_ids),
            "candidates": tried,
            "accepted": len(accepted),
            "rejected": len(rejected),
            "errors": len(errors),
            "yield": len(accepted) / tried if tried else 0.0,
            "requests": sum(1 for r in receipts if r.state in ("answered", "rejected")),
            "invalid_outputs": invalid,
            **_money(ledger, receipts, len(accepted), config),
        },
        "funnel": funnel,
        "rejections": dict(Counter(o["reason"] for o in rejected).most_common()),
        "rejections_by_stage": _by_stage(rejected),
        "errors": dict(Counter(o["reason"] for o in errors).most_common()),
        "accepted": [
            {
                "seed_id": o["seed_id"],
                "family": o["family"],
                "task": o["task"],
                "cost_usd": o["tally"]["cost_micro"] / 1e6,
                "worker_seconds": o["tally"]["worker_seconds"],
                "tally": o["tally"],
                "evidence": o["evidence"],
                "rollout": o.get("rollout"),
                **accepted_entry_extras(o, dropped),
            }
            for o in accepted
        ],
        "skipped": [
            {
                "seed_id": o["seed_id"],
                "family": o["family"],
                "status": o["status"],
                "reason": o["reason"],
                "stage": o["stage"],
                "detail": o["detail"],
                "cost_usd": o["tally"]["cost_micro"] / 1e6,
                "evidence": o["evidence"],
                "lineage": of_outcome(o).to_json(),
            }
            for o in rejected + errors
        ],
        "rounds": rounds_summary(ordered, seed_ids, round_records, int(config.get("rounds") or 1)),
        "population": {
            "size": config.get("population") or None,
            "dropped": list(dropped.values()),
        },
    }


def _money(
    ledger: Ledger, receipts: Sequence[Receipt], accepted: int, config: Mapping[str, Any]
) -> dict[str, Any]:
    """The totals' token cost (by kind, reconciled, over reservation) and worker time and cost."""
    totals = ledger.totals()
    reconciled = [r for r in receipts if r.state is State.RECONCILED]
    worker_seconds = sum(w.seconds or 0.0 for w in ledger.work())
    # no --worker-price: the worker cost is unknown, not $0
    priced = str(config.get("worker_price") or "") != ""
    per_hour = float(config["worker_price"]) if priced else None
    worker_usd = worker_seconds / 3600 * per_hour if per_hour is not None else None
    return {
        "reconciled_requests": len(reconciled),
        "reconciled_usd": sum(r.cost_micro or 0 for r in reconciled) / 1e6,
        "reconciled_rollout_requests": sum(1 for r in reconciled if is_rollout(r)),
        "token_cost_usd": totals.spent_micro / 1e6,
        # synthesis (the stages), rollout and search requests, apart
        "token_cost_by_kind_usd": _costs_by_kind(receipts),
        "settled_above_reservation": totals.over_reservation,
        "settled_above_reservation_usd": totals.over_reservation_micro / 1e6,
        "reserved_uncertain_usd": totals.open_micro / 1e6,
        "budget_usd": totals.limit_micro / 1e6,
        "worker_seconds": round(worker_seconds, 3),
        "token_cost_per_accepted_usd": totals.spent_micro / 1e6 / accepted if accepted else None,
        "worker_seconds_per_accepted": worker_seconds / accepted if accepted else None,
        "worker_usd_per_hour": per_hour,
        "worker_cost_usd": worker_usd,
        "worker_cost_per_accepted_usd": (
            worker_usd / accepted if accepted and worker_usd is not None else None
        ),
    }


SPEND_KINDS = ("synthesis", "rollout", "search")


def _costs_by_kind(receipts: Sequence[Receipt]) -> dict[str, float]:
    """Settled token cost of the stages' requests (synthesis), the rollouts' and the searches'."""
    micro = dict.fromkeys(SPEND_KINDS, 0)
    for receipt in receipts:
        if receipt.state in OPEN_STATES:
            continue  # still reserved, counted apart
        kind = receipt.label.partition(":")[0]
        micro[kind if kind in micro else "synthesis"] += receipt.cost_micro or 0
    return {kind: amount / 1e6 for kind, amount in micro.items()}


def _by_stage(rejected: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Rejections counted by the stage that rejected them, then by reason."""
    counted: dict[str, Counter[str]] = {}
    for outcome in rejected:
        counted.setdefault(outcome["stage"], Counter())[outcome["reason"]] += 1
    ordered = sorted(counted, key=lambda s: FUNNEL.index(s) if s in FUNNEL else len(FUNNEL))
    return {stage: dict(counted[stage].most_common()) for stage in ordered}


def write_report(out: Path, summary: dict[str, Any]) -> list[Path]:
    """run.json, the plots and report.md, each written atomically; the paths written."""
    written = [out / "run.json"]
    atomic_write_json(out / "run.json", summary, make_parents=True)
    written += plot_all(out / "plots", summary)
    atomic_write_text(out / "report.md", render_markdown(summary))
    written.append(out / "report.md")
    return written


def render_markdown(summary: Mapping[str, Any]) -> str:
    t = summary["totals"]
    per_task = t["token_cost_per_accepted_usd"]
    lines = [
        *_heading(summary),
        "## Yield and cost",
        "",
        "| | |",
        "|---|---|",
        f"| accepted tasks | {t['accepted']} |",
        f"| candidates tried | {t['candidates']} (of {t['seeds_available']} seeds) |",
        f"| yield (accepted over every seed tried, errors included) | {t['yield']:.1%} |",
        f"| rejected | {t['rejected']} |",
        f"| infrastructure errors (not rejections) | {t['errors']} |",
        f"| model requests | {t['requests']} ({t['invalid_outputs']} invalid answers) |",
        f"| token cost | ${t['token_cost_usd']:.6f} of ${t['budget_usd']:.2f} |",
        *_kinds_rows(t),
        f"| of which reconciled requests (answer lost, settled at their reservation; a stage's "
        f"request is sent again on resume, a rollout's never) | ${t.get('reconciled_usd', 0.0):.6f} "
        f"({t.get('reconciled_requests', 0)}, of which {t.get('reconciled_rollout_requests', 0)} "
        f"in rollouts) |",
        f"| reserved for uncertain requests | ${t['reserved_uncertain_usd']:.6f} |",
        f"| token cost per accepted task | {_usd(per_task)} |",
        f"| worker time (Harbor trials) | {t['worker_seconds']:.1f} s |",
        f"| worker time per accepted task | {_secs(t['worker_seconds_per_accepted'])} |",
        *_worker_cost_rows(t),
        f"| wall time | {summary['wall_seconds']:.1f} s |",
        "",
        "![yield funnel](plots/funnel.png)",
        "",
        "## Funnel",
        "",
        "| stage | seeds that reached it |",
        "|---|---|",
        *(f"| {stage} | {count} |" for stage, count in summary["funnel"].items()),
        "",
        "## Rejections by reason",
        "",
    ]
    if summary["rejections"]:
        lines += ["| reason | count |", "|---|---|"]
        lines += [f"| `{r}` | {n} |" for r, n in summary["rejections"].items()]
        lines += ["", "By stage:", "", "| stage | reason | count |", "|---|---|---|"]
        lines += [
            f"| {stage} | `{reason}` | {n} |"
            for stage, reasons in summary.get("rejections_by_stage", {}).items()
            for reason, n in reasons.items()
        ]
        lines += ["", "![rejection reasons](plots/rejections.png)"]
    else:
        lines.append("None.")
    if summary["errors"]:
        lines += ["", "Infrastructure errors (retried on resume, never counted as rejections):", ""]
        lines += [f"- `{r}`: {n}" for r, n in summary["errors"].items()]
    lines += ["", "## Accepted tasks", ""]
    if summary["accepted"]:
        lines += [
            "| task | mutation | reference | baseline | distinct sample pairs (execution) "
            "| token cost | worker time | rollout |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for a in summary["accepted"]:
            task = a["task"]
            rollout = a.get("rollout") or {}
            lines.append(
                f"| [{task['name']}]({task['path']}) | {task['mutation']} | "
                f"{task['reference_reward']:.4f} | {task['baseline_reward']:.4f} | "
                f"{_diversity(a['evidence'])} | ${a['cost_usd']:.6f} | {a['worker_seconds']:.1f} s | "
                f"{_rollout(rollout)} |"
            )
        lines += ["", "![cost per accepted task](plots/cost_per_task.png)"]
        lines += [
            "",
            "Every task is labelled unverified (stage: construction); its reference is the best "
            "sampled feasible solution, not a proven optimum. Per-case evidence is in run.json.",
        ]
    else:
        lines.append("None.")
    if int(summary["config"].get("rounds") or 1) > 1:
        lines += rounds_markdown(summary)
    if summary.get("search"):
        lines += _search_section(summary["search"])
    lines += ["", "## Skipped seeds", ""]
    if summary["skipped"]:
        lines += ["| seed | status | reason | stage | detail |", "|---|---|---|---|---|"]
        for s in summary["skipped"]:
            detail = " ".join(str(s["detail"]).split()).replace("|", "\\|")[:160]
            lines.append(
                f"| {s['seed_id']} | {s['status']} | `{s['reason']}` | {s['stage']} | {detail} |"
            )
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def _search_section(search: Mapping[str, Any]) -> list[str]:
    """`--search-steps`: the best score each task's search found, against the reference."""
    from atoll.frontiersmith.search import describe

    s = search["settings"]
    lines = [
        "",
        "## Search (Guidance-TTT, search-only)",
        "",
        f"{s['steps']} step(s) of {s['groups']} parent(s) x {s['rollouts']} rollout(s) per task, "
        "from the task's baseline, every candidate graded by the task's own checker.",
        "",
        "| task | baseline | reference | best found | best - reference | outcome |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in search["tasks"].items():
        best, reference = r.get("best_raw_score"), r.get("reference_reward")
        gap = "" if best is None or reference is None else f"{best - reference:+.4f}"
        outcome = describe(r).replace("|", "\\|")[:160]
        lines.append(
            f"| {name} | {_score(r.get('baseline_reward'))} | {_score(reference)} | "
            f"{_score(best)} | {gap} | {outcome} |"
        )
    return lines


def _heading(summary: Mapping[str, Any]) -> list[str]:
    """The title, what the run was and why it stopped, and the gates it applied."""
    config = summary["config"]
    return [
        f"# FrontierSmith collection {summary['run_id']}",
        "",
        f"Model `{config.get('model')}` at `{config.get('base_url')}`, seeds `{config.get('seeds')}`, "
        f"trials on `{config.get('environment')}`"
        + (f" ({config['environment_choice']})" if config.get("environment_choice") else "")
        + f", target {config.get('target')}. "
        f"Stopped: {summary['stop']['reason']}"
        + (f" ({summary['stop']['detail']})" if summary["stop"]["detail"] else "")
        + ".",
        "",
        _gates(config),
        "",
    ]


def _gates(config: Mapping[str, Any]) -> str:
    """The diversity gates the run applied, as its settings say."""
    return (
        f"Diversity gates: at least {config.get('min_divergence', 0.3):g} of the sample pairs "
        "use distinct core algorithms (review); at least "
        f"{config.get('min_execution_diversity', 0.3):g} of the feasible sample pairs are "
        "distinct in execution, a pair being distinct when its mean per-case score distance is "
        f"at least {config.get('min_score_spread', 0.001):g}."
    )


def _diversity(evidence: Mapping[str, Any]) -> str:
    measured = (evidence.get("execution") or {}).get("execution_diversity") or {}
    if "distinct_fraction" not in measured:
        return "-"
    return f"{measured['distinct_fraction']:.2f} of {len(measured['pairs'])}"


def _kinds_rows(t: Mapping[str, Any]) -> list[str]:
    kinds = t.get("token_cost_by_kind_usd") or {}
    rows = [
        f"| of which {kind} requests | ${kinds[kind]:.6f} |"
        for kind in SPEND_KINDS
        if kind in kinds
    ]
    if t.get("settled_above_reservation"):
        rows.append(
            f"| requests settled above their reservation (flagged in the ledger) | "
            f"{t['settled_above_reservation']} (${t['settled_above_reservation_usd']:.6f} over) |"
        )
    return rows


def _worker_cost_rows(t: Mapping[str, Any]) -> list[str]:
    if t.get("worker_cost_usd") is None:
        unknown = "unknown (no --worker-price)"
        return [f"| worker cost | {unknown} |", f"| worker cost per accepted task | {unknown} |"]
    return [
        f"| worker cost (at ${t['worker_usd_per_hour']:g} per hour) | ${t['worker_cost_usd']:.6f} |",
        f"| worker cost per accepted task | {_usd(t.get('worker_cost_per_accepted_usd'))} |",
    ]


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.6f}"


def _secs(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


def _rollout(rollout: Mapping[str, Any]) -> str:
    if not rollout:
        return "-"
    if rollout.get("status") == "scored":
        return f"{rollout['reward']:.4f}"
    return str(rollout.get("status"))


def plot_all(directory: Path, summary: Mapping[str, Any]) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    def save(figure: Figure, name: str) -> Path:
        FigureCanvasAgg(figure)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        path = directory / name
        atomic_write_bytes(path, buffer.getvalue(), make_parents=True)
        return path

    paths = []
    funnel = summary["funnel"]
    figure = Figure(figsize=(8, 4), dpi=100)
    axes = figure.add_subplot(1, 1, 1)
    axes.bar(list(funnel), list(funnel.values()), color="#4C72B0")
    axes.set_ylabel("seeds")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title("Yield funnel: seeds reaching each stage")
    axes.tick_params(axis="x", labelrotation=30)
    paths.append(save(figure, "funnel.png"))

    reasons = summary["rejections"]
    figure = Figure(figsize=(8, 4), dpi=100)
    axes = figure.add_subplot(1, 1, 1)
    if reasons:
        axes.barh(list(reasons), list(reasons.values()), color="#C44E52")
        axes.invert_yaxis()
    else:
        axes.text(0.5, 0.5, "no rejections", ha="center", va="center")
    axes.set_xlabel("candidates")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title("Rejections by reason")
    paths.append(save(figure, "rejections.png"))

    accepted = summary["accepted"]
    figure = Figure(figsize=(8, 4), dpi=100)
    money = figure.add_subplot(1, 2, 1)
    time_axes = figure.add_subplot(1, 2, 2)
    names = [a["task"]["name"] for a in accepted]
    money.bar(names, [a["cost_usd"] for a in accepted], color="#55A868")
    money.set_ylabel("token cost ($)")
    money.set_title("Token cost per accepted task")
    time_axes.bar(names, [a["worker_seconds"] for a in accepted], color="#8172B2")
    time_axes.set_ylabel("worker time (s)")
    time_axes.set_title("Worker time per accepted task")
    for axes in (money, time_axes):
        axes.tick_params(axis="x", labelrotation=60, labelsize=7)
        if not accepted:
            axes.text(0.5, 0.5, "no accepted task", ha="center", va="center")
    paths.append(save(figure, "cost_per_task.png"))
    return paths


def ledger_line(ledger: Ledger) -> str:
    totals = ledger.totals()
    return (
        f"spent {format_usd(totals.spent_micro)} of {format_usd(totals.limit_micro)}; "
        f"{format_usd(totals.open_micro)} reserved; {totals.uncertain} uncertain"
    )
