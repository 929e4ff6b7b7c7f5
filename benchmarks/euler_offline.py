"""The Euler pipeline's own costs, without any rollout: import, gate, curriculum tally, report.

What a researcher waits for around the rollouts: importing a full-size zip
(one HTML file per problem, a Solutions.md, linked resources), gating one
rollout record, auditing one trajectory's bash calls, tallying a curriculum round from its rows, and recomputing a
report from raw rows (Markdown only, then with plots). Medians over repeats.

    uv run python benchmarks/euler_offline.py [--problems 900] [--rows 20000] [--repeats 5]
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from atoll.core.sizes import KiB
from atoll.euler import curriculum, gate, importer, record_input, report
from atoll.euler import store as stores
from atoll.pi import audit
from atoll.pi.events import ToolCall

app = typer.Typer(add_completion=False)
# Everyday exploration and solving commands, as a trajectory has them.
AUDITED = [
    "ls -la",
    "awk '/ERROR/ {n++} END {print n+0}' notes.txt; sed -n '/^#/p' notes.txt",
    "echo $((10 / 3)); grep -c 'GET /api' access.log",
    "cat > solution.py <<'EOF'\nprint(sum(i for i in range(1000) if i % 3 == 0 or i % 5 == 0))\nEOF",
    "python3 solution.py 2>&1 | tail -5",
    'for f in *.txt; do wc -l "$f"; done',
    'case "$x" in a) echo a;; esac',
    "timeout 60 python3 solution.py",
    "cat /etc/hostname",
    "find . -name '*.py' | xargs grep -n range",
]
console = Console(width=110)


def _zip(path: Path, problems: int, rng: random.Random) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        lines = ["# Solutions", ""]
        for n in range(1, problems + 1):
            words = " ".join(
                rng.choice(["sum", "prime", "digit", "grid", "path"]) for _ in range(300)
            )
            link = (
                f' See <a href="resources/documents/{n:04d}_data.txt">data</a>.'
                if n % 20 == 0
                else ""
            )
            archive.writestr(f"Problems/{n}.html", f"<h2>Problem {n}</h2><p>{words}.{link}</p>")
            if n % 20 == 0:
                archive.writestr(f"resources/documents/{n:04d}_data.txt", "1 2 3\n" * 2000)
            lines.append(f"{n}. {rng.randrange(10**12)}")
        archive.writestr("Solutions.md", "\n".join(lines) + "\n")


def _record(rng: random.Random, commands: int) -> dict[str, Any]:
    ops: list[dict[str, Any]] = []
    calls = []
    for i in range(commands):
        call = f"c{i}"
        if i % 3 == 0:
            calls.append({"id": call, "name": "write", "arguments": {"path": "solution.py"}})
            ops.append(
                {
                    "seq": len(ops) + 1,
                    "call_id": call,
                    "op": "write",
                    "path": "/workspace/solution.py",
                }
            )
        else:
            calls.append({"id": call, "name": "bash", "arguments": {}})
            command = "python3 solution.py" if i % 3 == 1 else "ls -la && cat solution.py | head"
            ops.append(
                {
                    "seq": len(ops) + 1,
                    "call_id": call,
                    "op": "bash",
                    "command": command,
                    "cwd": "/workspace",
                    "exit_code": 0,
                    "stdout": "x\n" * 50 + "233168\n",
                    "stderr": "",
                }
            )
    return {
        "commands": ops,
        "tool_calls": calls,
        "final_text": "It is 233168.",
        "container": {"workdir": "/workspace"},
    }


def _rows(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [
        {
            "run_id": "r",
            "phase": rng.choice(["frontier", "replay-recent"]),
            "problem": rng.randrange(1, 101),
            "language": rng.choice(["python", "javascript"]),
            "approach": rng.choice(["direct", "math-first"]),
            "sample": i,
            "status": "scored",
            "passed": rng.random() < 0.4,
            "executed": rng.random() < 0.8,
            "latency_s": rng.uniform(5, 120),
            "gate": {"failed": ["final_line_matches"]},
        }
        for i in range(count)
    ]


def _median(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


@app.command()
def main(problems: int = 900, rows: int = 20_000, repeats: int = 5) -> None:
    rng = random.Random(7)
    table = Table(title="atoll euler without rollouts (median of repeats)")
    for column in ("operation", "size", "median", "per item"):
        table.add_column(column, justify="left" if column == "operation" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _zip(root / "euler.zip", problems, rng)
        size = (root / "euler.zip").stat().st_size
        read = _median(lambda: importer.read_zip(root / "euler.zip"), repeats)
        table.add_row(
            "read zip (detect, parse, extract text)",
            f"{problems} problems, {size // KiB} KiB",
            f"{read:.3f} s",
            f"{1e3 * read / problems:.2f} ms",
        )
        catalog = importer.read_zip(root / "euler.zip")
        counter = iter(range(10**6))
        write = _median(lambda: stores.write(catalog, root / f"store-{next(counter)}"), repeats)
        table.add_row(
            "write store (atomic, fsync'd)",
            f"{problems} problems",
            f"{write:.3f} s",
            f"{1e3 * write / problems:.2f} ms",
        )
        for commands in (6, 60):
            record = _record(rng, commands)
            one = _median(
                lambda r=record: gate.score(record_input.gate_input(r), "233168", "python"),
                repeats * 20,
            )
            table.add_row(
                "gate one rollout record", f"{commands} operations", f"{1e3 * one:.2f} ms", ""
            )
        calls = [
            ToolCall(f"c{i}", "bash", {"command": command}, 1)
            for i, command in enumerate(AUDITED * 4)
        ]
        audited = _median(lambda: audit.audit(calls), repeats * 4)
        table.add_row(
            "path audit (bashlex) of one trajectory",
            f"{len(calls)} bash calls",
            f"{1e3 * audited:.2f} ms",
            f"{1e6 * audited / len(calls):.0f} us",
        )
        data = _rows(rng, rows)
        state = curriculum.State.new(
            curriculum.Config("d", ("python", "javascript"), ("direct",), samples=500)
        )
        curriculum.begin(state, "s")
        plan = curriculum.plan(state, 1)
        frontier = [
            dict(r, phase="frontier", problem=1, approach="direct", sample=r["sample"] % 500)
            for r in data[:1000]
        ]
        tally = _median(lambda: curriculum.tally(plan, frontier), repeats)
        table.add_row("tally a curriculum round", "1,000 rows", f"{1e3 * tally:.1f} ms", "")
        text = _median(lambda: report.markdown(data, ks=(1, 5, 10)), repeats)
        table.add_row(
            "report (Markdown)", f"{rows:,} rows", f"{text:.3f} s", f"{1e6 * text / rows:.1f} us"
        )
        report.plot(data[:10], root / "warm-up")  # matplotlib's import and font cache, once
        full = _median(lambda: report.write(data, root / "report"), max(1, repeats // 2))
        table.add_row("report (Markdown + 2 PNG plots)", f"{rows:,} rows", f"{full:.3f} s", "")
    console.print(table)


if __name__ == "__main__":
    app()
