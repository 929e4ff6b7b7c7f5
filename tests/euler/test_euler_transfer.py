"""The frozen transfer suite, manifest binding, and `transfer compare`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from atoll.core.cli import main
from atoll.core.durable import canonical_json
from atoll.euler import report, rows
from atoll.euler.transfer import compare, reference, suite
from atoll.euler.transfer import manifest as manifests
from atoll.euler.transfer.manifest import AcceptanceRule, ManifestError


def test_suite_reproduces_its_pinned_digest() -> None:
    tasks = suite.verified()
    assert sorted(tasks) == sorted(suite.TASK_IDS) and len(tasks) == 4
    assert all(task.files and task.statement for task in tasks.values())
    assert tasks["shard-totals"].files.keys() == {f"shard-{i}.jsonl" for i in range(4)}


def test_a_changed_answer_breaks_the_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(reference.SOLUTIONS, "weighted-checksum", lambda files: 7)
    with pytest.raises(suite.SuiteError, match="digest"):
        suite.verified()


def test_acceptance_rule_parsing() -> None:
    assert AcceptanceRule.parse("min_delta=0.1,alpha=0.05") == AcceptanceRule(0.1, 0.05)
    for bad in ("min_delta=0.1", "alpha=2,min_delta=0", "x=1,alpha=0.1", "min_delta=a,alpha=0.1"):
        with pytest.raises(ManifestError):
            AcceptanceRule.parse(bad)


LIMITS = {
    "max_turns": 30,
    "timeout_s": 900.0,
    "max_tokens": 16384,
    "context_window": 128000,
    "command_timeout_s": 300.0,
    "thinking": None,
    "system_prompt_sha256": None,
}


def fake_manifest(**changes: Any) -> dict[str, Any]:
    data = manifests.new(
        suite={"name": suite.SUITE_NAME, "digest": suite.SUITE_DIGEST},
        selection=list(suite.TASK_IDS),
        fanout={"languages": ["python"], "approaches": ["direct"], "samples": 5},
        sandbox_image={
            "tag": "atoll/pi-rollout:bookworm",
            "image_id": "sha256:abc",
            "runtimes": {},
        },
        run_limits=LIMITS,
        model={"name": "m", "signature": "s"},
        expected_rows=20,
        acceptance=changes.pop("acceptance", None),
    )
    data.update(changes)
    return data


def completed_run(directory: Path, passes: dict[str, int], **changes: Any) -> dict[str, Any]:
    """A transfer run on disk: its manifest fixed first, rows, summary, then completion."""
    directory.mkdir(parents=True)
    data = fake_manifest(**changes)
    manifests.write(directory, data)
    rule_sha = (data.get("acceptance") or {}).get("rule_sha256")
    for task in suite.TASK_IDS:
        for sample in range(5):
            rows.append(
                directory / rows.ROWS_FILE,
                {
                    "run_id": "transfer",
                    "phase": "transfer",
                    "problem": task,
                    "language": "python",
                    "approach": "direct",
                    "sample": sample,
                    "status": "scored",
                    "passed": sample < passes.get(task, 0),
                    "executed": True,
                    "latency_s": 1.0,
                    "acceptance_rule_sha256": rule_sha,
                    "created_at": manifests.now(),
                },
            )
    report.write(
        rows.read(directory / rows.ROWS_FILE), directory, name=manifests.SUMMARY_FILE, plots=False
    )
    return manifests.complete(directory, data, directory / rows.ROWS_FILE, 20)


BASE = {"filtered-logs": 2, "signed-inventory": 1, "weighted-checksum": 3, "shard-totals": 0}
BETTER = {"filtered-logs": 5, "signed-inventory": 5, "weighted-checksum": 5, "shard-totals": 4}


def test_completed_manifest_binds_results(tmp_path: Path) -> None:
    done = completed_run(tmp_path / "a", BASE)
    assert done["status"] == "completed" and done["rows"] == done["expected_rows"] == 20
    assert (
        done["result_sha256"]
        == hashlib.sha256((tmp_path / "a" / "rows.jsonl").read_bytes()).hexdigest()
    )
    assert (
        done["summary_sha256"]
        == hashlib.sha256((tmp_path / "a" / "summary.md").read_bytes()).hexdigest()
    )
    assert set(done["hashes"]) == {"evaluator", "scorer", "tools", "record", "summary"}
    assert done["limits"] == LIMITS
    # every module that produces a row or the summary is bound by its own hash
    for module in ("atoll.pi.events", "atoll.pi.record", "atoll.pi.settings", "atoll.euler.report"):
        assert len(done["modules"][module]) == 64
    assert {"atoll.euler.stats", "atoll.euler.evaluate", "atoll.euler.gate"} <= set(done["modules"])
    manifests.verify_completed(tmp_path / "a", done, "A")


@pytest.mark.slow
def test_counts_and_fisher_per_task_and_overall(tmp_path: Path) -> None:
    completed_run(tmp_path / "a", BASE)
    completed_run(tmp_path / "b", BETTER)
    result = compare.compare(tmp_path / "a", tmp_path / "b")
    by_task = {line["task"]: line for line in result["tasks"]}
    assert (
        by_task["shard-totals"]["a"]["passes"] == 0 and by_task["shard-totals"]["b"]["passes"] == 4
    )
    # 0/5 vs 4/5: two-sided Fisher p = 2 * C(5,0)C(5,4)/C(10,4) ... = 0.0476
    assert by_task["shard-totals"]["fisher"]["p_two_sided"] == pytest.approx(10 / 210, abs=1e-9)
    overall = result["overall"]
    assert (overall["a"]["passes"], overall["b"]["passes"]) == (6, 19)
    assert overall["delta"] == pytest.approx(13 / 20)
    assert result["decision"]["verdict"] is None
    text = compare.markdown(result)
    assert compare.NO_RULE in text
    assert "promote" not in text.replace(compare.NO_RULE, "")
    assert "promote" not in compare.NO_RULE.split()


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("suite", {"name": suite.SUITE_NAME, "digest": "0" * 64}, "suite.digest"),
        (
            "fanout",
            {"languages": ["python"], "approaches": ["direct"], "samples": 4},
            "fanout.samples",
        ),
        (
            "sandbox_image",
            {"tag": "x", "image_id": "sha256:def", "runtimes": {}},
            "sandbox_image.image_id",
        ),
        ("hashes", {**manifests.hashes(), "scorer": "0" * 64}, "hashes.scorer"),
        *[
            ("limits", {**LIMITS, name: value}, f"limits.{name}")
            for name, value in [
                ("max_turns", 12),
                ("timeout_s", 120.0),
                ("max_tokens", 4096),
                ("context_window", 32768),
                ("command_timeout_s", 60.0),
                ("thinking", "high"),
                ("system_prompt_sha256", "0" * 64),
            ]
        ],
        *[
            ("modules", {**manifests.module_hashes(), module: "0" * 64}, f"modules.{module}")
            for module in (
                "atoll.pi.events",
                "atoll.pi.record",
                "atoll.pi.settings",
                "atoll.euler.report",
                "atoll.euler.stats",
                "atoll.euler.evaluate",
                "atoll.euler.gate",
                "atoll.pi.audit",
                "atoll.pi.audit_shell",
            )
        ],
        ("expected_rows", 24, "expected_rows"),
        ("selection", ["filtered-logs"], "selection"),
    ],
)
def test_mismatched_manifests_are_rejected_before_anything_is_computed(
    tmp_path: Path, field: str, value: Any, named: str
) -> None:
    completed_run(tmp_path / "a", BASE)
    b_dir = tmp_path / "b"
    completed_run(b_dir, BETTER)
    data = json.loads((b_dir / "manifest.json").read_text())
    data[field] = value
    (b_dir / "manifest.json").write_text(json.dumps(data))
    (b_dir / "rows.jsonl").write_text("not json at all\n{{{\n")  # never read
    with pytest.raises(ManifestError, match="not comparable") as caught:
        compare.compare(tmp_path / "a", b_dir)
    message = str(caught.value)
    assert "\n" not in message and named + ":" in message
    assert message.count(": ") == 2  # "not comparable: FIELD: A vs B" names that one field


def test_a_changed_rows_file_or_an_open_run_is_refused(tmp_path: Path) -> None:
    completed_run(tmp_path / "a", BASE)
    completed_run(tmp_path / "b", BETTER)
    with (tmp_path / "b" / "rows.jsonl").open("a") as handle:
        handle.write("\n")
    with pytest.raises(ManifestError, match="changed since its manifest was completed"):
        compare.compare(tmp_path / "a", tmp_path / "b")
    data = json.loads((tmp_path / "a" / "manifest.json").read_text())
    data["status"] = "sampling"
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="not completed"):
        compare.compare(tmp_path / "a", tmp_path / "b")


@pytest.mark.slow
def test_decision_only_with_a_rule_fixed_before_sampling(tmp_path: Path) -> None:
    rule = AcceptanceRule(0.2, 0.05)
    completed_run(tmp_path / "a", BASE)
    completed_run(tmp_path / "b", BETTER, acceptance=rule)
    decided = compare.compare(tmp_path / "a", tmp_path / "b")["decision"]
    assert decided["verdict"] == "promote" and "before sampling" in decided["text"]
    completed_run(
        tmp_path / "c",
        {"filtered-logs": 3, "signed-inventory": 1, "weighted-checksum": 3},
        acceptance=rule,
    )
    assert (
        compare.compare(tmp_path / "a", tmp_path / "c")["decision"]["verdict"] == "do not promote"
    )


@pytest.mark.slow
def test_a_rule_written_in_after_sampling_gives_no_decision(tmp_path: Path) -> None:
    completed_run(tmp_path / "a", BASE)
    completed_run(tmp_path / "b", BETTER)
    data = json.loads((tmp_path / "b" / "manifest.json").read_text())
    rule = AcceptanceRule(0.0, 0.5).to_json()
    data["acceptance"] = {
        "rule": rule,
        "rule_sha256": hashlib.sha256(canonical_json(rule)).hexdigest(),
        "fixed_at": data["sampling_started_at"],
    }
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(data))
    result = compare.compare(tmp_path / "a", tmp_path / "b")
    assert result["decision"]["verdict"] is None  # the rows were not sampled under that rule


@pytest.mark.slow
def test_compare_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    completed_run(tmp_path / "a", BASE)
    completed_run(tmp_path / "b", BETTER)
    assert main(["euler", "transfer", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "| overall | 6/20 (0.300) | 19/20 (0.950) | +0.650 |" in out
    data = json.loads((tmp_path / "b" / "manifest.json").read_text())
    data["fanout"]["samples"] = 9
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(data))
    assert main(["euler", "transfer", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fanout.samples: 5 vs 9" in err


def test_transfer_run_flags_reach_the_manifest_limits(tmp_path: Path) -> None:
    """`--max-turns`, `--timeout`, `--thinking` and `--system-prompt`, parsed by the command's
    own options, are what `limits` binds (through the settings every rollout runs under)."""
    import typer

    from atoll.euler import cli
    from atoll.euler.commands.transfer_run import run_options

    prompt = tmp_path / "system.md"
    prompt.write_text("Solve it in the workspace.\n", "utf-8")
    command = typer.main.get_command(cli.app).commands["transfer"].commands["run"]  # type: ignore[attr-defined]

    def limits(*flags: str) -> dict[str, Any]:
        arguments = ["--out", str(tmp_path / "run"), "--base-url", "http://127.0.0.1:9/v1"]
        arguments += ["--model", "m", *flags]
        params = command.make_context("run", arguments).params
        return manifests.limits(run_options(params).settings().pi)

    given = limits(
        "--max-turns", "7", "--timeout", "123", "--thinking", "high",
        "--system-prompt", str(prompt),
    )  # fmt: skip
    assert given["max_turns"] == 7
    assert given["timeout_s"] == 123
    assert given["thinking"] == "high"
    assert given["system_prompt_sha256"] == hashlib.sha256(prompt.read_bytes()).hexdigest()
    default = limits()
    assert default["max_turns"] != 7 and default["timeout_s"] != 123
    assert default["thinking"] != "high" and default["system_prompt_sha256"] is None


def test_the_manifest_binds_the_modules_that_build_the_run() -> None:
    """The flags-to-settings module, the transfer command and the manifest itself are hashed."""
    hashes = manifests.module_hashes()
    for module in (
        "atoll.euler.commands.common",
        "atoll.euler.commands.transfer_run",
        "atoll.euler.transfer.manifest",
    ):
        assert len(hashes[module]) == 64
