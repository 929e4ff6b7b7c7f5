"""Per-rollout archive bookkeeping at 1,000 nodes: journal append vs whole-file rewrite.

Each timed operation is what the step loop does for one rollout: ask PUCT for
the group's parent (chosen once per group and step, then recalled) and book
the finished rollout durably. The journal-backed `Library` appends one fsync'd
line; the baseline applies the same events in memory and then rewrites the
whole archive as JSON atomically (temp file, fsync, rename, directory fsync).
Both run in the same process on the same disk, interleaved rollout by rollout,
and evolve identical archives. Step-end compaction is outside the timings.

    uv run python benchmarks/archive_ops.py [--nodes 1000] [--steps 4] ...
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from atoll.core.durable import atomic_write_json
from atoll.guidance_ttt.contract import Direction
from atoll.guidance_ttt.search.archive import Archive, Rollout, Selection
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification
from atoll.guidance_ttt.state.durable_archive import Library

app = typer.Typer(add_completion=False)
console = Console(width=110)

WORDS = [
    "place",
    "piece",
    "grid",
    "row",
    "col",
    "best",
    "score",
    "rotate",
    "flip",
    "fits",
    "area",
    "cell",
    "next",
    "undo",
]


def _program(rng: random.Random, size: int, tag: str) -> str:
    lines = [f"// candidate {tag}", "#include <bits/stdc++.h>", "int main() {"]
    length = sum(len(line) + 1 for line in lines)
    while length < size:
        a, b, c = rng.sample(WORDS, 3)
        line = f"    int {a}_{rng.randrange(10**6)} = {b}({c}, {rng.randrange(1000)});"
        lines.append(line)
        length += len(line) + 1
    lines.append("}")
    return "\n".join(lines) + "\n"


def _verdict(rng: random.Random) -> Verification:
    if rng.random() < 0.3:
        return Verification(Status.COMPILE_ERROR, None, 0.0, "error: expected ';'")
    raw = rng.uniform(20.0, 90.0)
    return Verification(Status.VALID, raw, raw / 100.0, "accepted")


def _rollout(
    rng: random.Random, step: int, group: int, index: int, parent: int, size: int
) -> Rollout:
    return Rollout(
        step=step,
        group=group,
        rollout=index,
        parent_id=parent,
        verification=_verdict(rng),
        guidance="Place the long pieces along the border first, then fill the interior greedily.",
        program=_program(rng, size, f"{step}-{group}-{index}"),
        summary="Border-first greedy placement with a local repair pass over uncovered cells.",
        metadata={"receipt": f"rec-{step}-{group}-{index}"},
    )


def _grow(nodes: int, groups: int, size: int, rng: random.Random) -> Archive:
    """A binary tree of `nodes` scored programs, grown with the archive's own events.

    Every node gets two valid children, breadth first, so the step-end filter
    (two children per parent, at most 1,000 nodes) keeps the whole tree and
    the timed steps run against a full-size archive.
    """
    seed = Entry(
        program=_program(rng, size, "seed"),
        summary="Row-major greedy placement.",
        verification=Verification(Status.VALID, 27.8, 0.278, "accepted"),
    )
    archive = Archive.seeded(seed, Direction.MAX, groups)
    frontier = list(archive.nodes)
    while len(archive.nodes) < nodes:
        step = archive.step
        parents, frontier = frontier[:groups], frontier[groups:]
        for group, parent in enumerate(parents):
            archive.apply_selection(Selection(step, group, parent))
            for index in range(2):
                if len(archive.nodes) >= nodes:
                    break
                made = _rollout(rng, step, group, index, parent, size)
                raw = rng.uniform(20.0, 90.0)
                made = replace(made, verification=Verification(Status.VALID, raw, raw / 100, "ok"))
                child = archive.apply_rollout(made)
                assert child is not None
                frontier.append(child)
        archive.finish_step(step)
    return archive


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@app.command()
def main(
    nodes: int = typer.Option(1000, help="Archive size the rollouts run against."),
    steps: int = typer.Option(4, help="Steps timed; every step has groups × rollouts rollouts."),
    groups: int = typer.Option(8, help="G: groups per step."),
    rollouts: int = typer.Option(8, help="R: rollouts per group."),
    program_bytes: int = typer.Option(4000, help="Size of each candidate program."),
    directory: Path | None = typer.Option(None, help="Where to write (default: a temp dir)."),
) -> None:
    rng = random.Random(7)
    console.print(f"growing an archive of {nodes} nodes ({program_bytes} B programs) …")
    grown = _grow(nodes, groups, program_bytes, rng)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        root = Path(tmp)
        library = Library.create(root / "journal", Archive.from_json(grown.to_json()))
        baseline = Archive.from_json(grown.to_json())
        baseline_file = root / "rewrite" / "library.json"
        baseline_file.parent.mkdir()
        atomic_write_json(baseline_file, baseline.to_json())
        size = baseline_file.stat().st_size
        journal_ns: list[float] = []
        rewrite_ns: list[float] = []
        journal_select_ns: list[float] = []
        rewrite_select_ns: list[float] = []
        rollout_rng = random.Random(11)
        for _ in range(steps):
            step = library.archive.step
            # Step start: PUCT picks the G parents, each pick made durable.
            start = time.perf_counter_ns()
            library.select_step(step, groups)
            journal_select_ns.append(time.perf_counter_ns() - start)
            start = time.perf_counter_ns()
            for group in range(groups):
                baseline.apply_selection(baseline.choose(step, group))
            atomic_write_json(baseline_file, baseline.to_json())
            rewrite_select_ns.append(time.perf_counter_ns() - start)
            for group in range(groups):
                for index in range(rollouts):
                    # Per rollout: recall the group's parent, book the result durably.
                    # Making the rollout (generating its program) is not timed.
                    start = time.perf_counter_ns()
                    parent = library.select(step, group)
                    selected = time.perf_counter_ns()
                    made = _rollout(rollout_rng, step, group, index, parent.id, program_bytes)
                    start_record = time.perf_counter_ns()
                    library.record(made)
                    journal_ns.append(selected - start + time.perf_counter_ns() - start_record)
                    # The baseline: the same events in memory, then rewrite the whole file.
                    start = time.perf_counter_ns()
                    assert baseline.choose(step, group).node_id == parent.id
                    baseline.apply_rollout(made)
                    atomic_write_json(baseline_file, baseline.to_json())
                    rewrite_ns.append(time.perf_counter_ns() - start)
            library.finish_step(step)
            baseline.finish_step(step)
        assert library.archive.to_json() == baseline.to_json(), "the two archives diverged"
        final_nodes = len(library.archive.nodes)
        library.close()

    _report(
        {"journal": journal_ns, "rewrite": rewrite_ns},
        {"journal": journal_select_ns, "rewrite": rewrite_select_ns},
        groups,
        (len(grown.nodes), final_nodes, size),
    )


def _report(
    per_rollout: dict[str, list[float]],
    per_step: dict[str, list[float]],
    groups: int,
    sizes: tuple[int, int, int],
) -> None:
    def ms(samples: list[float], q: float | None = None) -> str:
        value = statistics.median(samples) if q is None else _percentile(samples, q)
        return f"{value / 1e6:.3f}"

    count = len(per_rollout["journal"])
    table = Table(title=f"Archive bookkeeping at {sizes[0]} nodes ({count} rollouts per method)")
    table.add_column("operation")
    table.add_column("method")
    table.add_column("median (ms)", justify="right")
    table.add_column("p99 (ms)", justify="right")
    names = {"journal": "journal append (Library)", "rewrite": "whole-archive JSON rewrite"}
    for key, name in names.items():
        samples = per_rollout[key]
        table.add_row("one rollout: select + submit", name, ms(samples), ms(samples, 0.99))
    for key, name in names.items():
        samples = per_step[key]
        table.add_row(f"step start: select {groups} parents", name, ms(samples), ms(samples, 0.99))
    console.print(table)
    journal, rewrite = per_rollout["journal"], per_rollout["rewrite"]
    median_ratio = statistics.median(rewrite) / statistics.median(journal)
    p99_ratio = _percentile(rewrite, 0.99) / _percentile(journal, 0.99)
    start_nodes, end_nodes, size = sizes
    console.print(
        f"archive: {start_nodes} nodes at the start, {end_nodes} after the timed steps; "
        f"whole file {size / 1e6:.2f} MB"
    )
    console.print(
        f"per rollout, the journal is {median_ratio:.1f}× faster at the median, "
        f"{p99_ratio:.1f}× at p99"
    )


if __name__ == "__main__":
    app()
