"""Reports recomputed from raw rows: fractions, pass@k, execution rate, latency, plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atoll.core.cli import main
from atoll.euler import report, rows


def row(
    problem: int,
    language: str,
    passed: bool,
    *,
    sample: int,
    executed: bool = True,
    latency: float = 10.0,
    status: str = "scored",
    approach: str = "direct",
    disqualified: bool = False,
    failed: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "run_id": "r",
        "phase": "eval",
        "problem": problem,
        "language": language,
        "approach": approach,
        "sample": sample,
        "status": status,
        "passed": passed,
        "executed": executed,
        "latency_s": latency,
        "disqualified": disqualified,
        "model": "m",
        "model_signature": "abc",
        "gate": {"failed": failed or ([] if passed else ["final_line_matches"])},
        "error": None if status == "scored" else "provider down",
    }


def sample_rows() -> list[dict[str, Any]]:
    data = []
    # problem 1 python: 3 of 4 pass; problem 1 javascript: 1 of 4; problem 2 python: 0 of 4, 2 executed
    data += [row(1, "python", i < 3, sample=i, latency=10 + i) for i in range(4)]
    data += [row(1, "javascript", i == 0, sample=i, latency=20) for i in range(4)]
    data += [row(2, "python", False, sample=i, executed=i < 2, latency=30) for i in range(4)]
    data.append(row(2, "python", False, sample=9, status="error"))
    data.append(row(2, "javascript", False, sample=0, disqualified=True, failed=[]))
    return data


def test_group_numbers() -> None:
    groups = {g.label: g for g in report.by(sample_rows(), "problem")}
    one, two = groups["1"], groups["2"]
    assert (one.attempts, one.passes) == (8, 4)
    assert one.pass_fraction == 0.5
    # pass@2 averaged over the two cells: python 1 - C(1,2)/C(4,2) = 1, javascript 1 - C(3,2)/C(4,2) = 0.5
    assert one.pass_at(2) == pytest.approx(0.75)
    assert (two.attempts, two.errors, two.disqualified) == (5, 1, 1)
    assert two.execution_rate == pytest.approx(3 / 5)
    overall = report.group(sample_rows(), "all")
    assert overall.attempts == 13 and overall.errors == 1
    languages = {g.label: g for g in report.by(sample_rows(), "language")}
    assert languages["python"].pass_fraction == pytest.approx(3 / 8)


def test_pass_at_k_cells_with_fewer_than_k_attempts_are_shown_with_their_n() -> None:
    groups = {g.label: g for g in report.by(sample_rows(), "problem")}
    # problem 2: python has 4 scored attempts, javascript 1 (disqualified); k = 2
    assert groups["2"].pass_at_cell(2) == "0.000 (1 cell with n=1 < 2: pass@n 0.000)"
    # k = 5: no cell has 5 attempts, and every cell is still shown with its n
    assert groups["1"].pass_at_cell(5) == "— (2 cells with n=4 < 5: pass@n 1.000)"
    assert groups["1"].pass_at_cell(4) == "1.000"


@pytest.mark.slow
def test_infrastructure_errors_have_their_own_column(tmp_path: Path) -> None:
    text = report.write(sample_rows(), tmp_path, ks=(1,))
    header = next(line for line in text.splitlines() if line.startswith("| problem |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns[-1] == "infrastructure errors"
    two = next(line for line in text.splitlines() if line.startswith("| 2 |"))
    cells = [c.strip() for c in two.strip("|").split("|")]
    assert cells[1] == "5" and cells[-1] == "1"  # 5 scored attempts; the error is not one


@pytest.mark.slow
def test_markdown_and_plots(tmp_path: Path) -> None:
    text = report.write(sample_rows(), tmp_path, ks=(1, 2))
    assert "| problem | attempts | passes | pass fraction | pass@1 | pass@2 |" in text
    assert "| 1 | 8 | 4 | 0.500 | 0.500 | 0.750 |" in text
    assert "## By language" in text and "## By approach" in text and "## By phase" in text
    assert "| path_audit | 1 |" in text
    assert "## Infrastructure errors" in text and "provider down" in text
    for name in ("pass_rate.png", "latency.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "summary.md").read_text() == text


@pytest.mark.slow
def test_report_command_reads_rows_and_drops_a_torn_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run" / rows.ROWS_FILE
    path.parent.mkdir()
    for item in sample_rows():
        rows.append(path, item)
    with path.open("a") as handle:
        handle.write('{"problem": 3, "torn')
    assert main(["euler", "report", str(tmp_path / "run"), "--k", "1,2"]) == 0
    captured = capsys.readouterr()
    assert "dropped a torn last line" in captured.err
    assert "| 1 | 8 | 4 | 0.500 | 0.500 | 0.750 |" in captured.out
    assert (tmp_path / "run" / "report" / "report.md").exists()
    assert (tmp_path / "run" / "report" / "pass_rate.png").exists()


def test_a_damaged_line_in_the_middle_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / rows.ROWS_FILE
    path.write_text(
        json.dumps(row(1, "python", True, sample=0))
        + "\n{oops\n"
        + json.dumps(row(1, "python", True, sample=1))
        + "\n"
    )
    assert main(["euler", "report", str(path)]) == 2
    assert "line 2 is not a JSON row" in capsys.readouterr().err


def test_repair_cuts_only_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows.append(path, {"a": 1})
    with path.open("a") as handle:
        handle.write('{"b": ')
    assert rows.repair(path) == len('{"b": ')
    assert rows.read(path) == [{"a": 1}]
    assert rows.repair(path) == 0


def test_a_retried_attempt_counts_once() -> None:
    failed_then_scored = [
        row(1, "python", False, sample=0, status="error"),
        row(1, "python", True, sample=0),
    ]
    only_errors = [
        row(2, "python", False, sample=0, status="error"),
        row(2, "python", False, sample=0, status="error"),
    ]
    latest = rows.latest_per_attempt(failed_then_scored + only_errors)
    assert len(latest) == 2
    overall = report.group(latest, "all")
    assert (overall.attempts, overall.passes, overall.errors) == (1, 1, 1)
