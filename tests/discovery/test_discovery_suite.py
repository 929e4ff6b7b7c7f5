"""`atoll suite run`: a search per task with `atoll run`, resumable, and one table of records.

The end-to-end test runs the real command on two tasks (one minimized, one
maximized) with scripted models, exactly as a user would: each task is an
ordinary `atoll run --agent guidance-ttt` on atoll-local, whose trial's verifier
re-scores the program the search handed in. The table must list every record
of each task with its source, the seed and best scores the trials measured, and
the gap in the task's direction; the same command again must run nothing, and
more steps must resume each search where it stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.guidance_run import GuidanceScript
from support.openai_server import NumberedScript, Reply

from atoll.discovery import task_dir, task_facts
from atoll.discovery.records import gap
from atoll.discovery.suite import SuiteError, SuiteSettings, load_record, run_command
from atoll.discovery.suite_table import markdown, rows

pytest_plugins = ["support.fixtures"]

DATA = Path(__file__).parent / "data"
TASK_PAIR = ("erdos_min_overlap", "circle_packing_26")


# --- the settings and the table, without a run ----------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        (("steps=3",), "the suite sets steps and state_dir itself"),
        (("state_dir=/tmp/x",), "the suite sets steps and state_dir itself"),
        (("training",), "expected KEY=VALUE"),
    ],
)
def test_settings_the_suite_owns_or_cannot_read_are_refused(kwargs, why):
    with pytest.raises(SuiteError, match=why):
        SuiteSettings(2, agent_kwargs=kwargs)
    with pytest.raises(SuiteError, match="at least 1"):
        SuiteSettings(0)


def test_each_task_runs_as_the_atoll_run_a_user_would_type(tmp_path):
    settings = SuiteSettings(
        3, env="atoll-local", agent_kwargs=("training=off",), agent_env=("A=1",)
    )
    argv = run_command("circle_packing_32", tmp_path, settings)
    assert argv[1:4] == ["-m", "atoll.core.cli", "run"]
    assert argv[4:] == [
        "-y",
        "--task",
        "circle_packing_32",
        "--agent",
        "guidance-ttt",
        "-o",
        str(tmp_path / "circle_packing_32" / "jobs"),
        "--env",
        "atoll-local",
        "--ak",
        "steps=3",
        "--ak",
        f"state_dir={tmp_path / 'circle_packing_32' / 'state'}",
        "--ak",
        "training=off",
        "--ae",
        "A=1",
    ]


def test_the_table_has_a_row_per_record_and_the_gap_follows_the_direction():
    tasks: dict[str, dict[str, Any]] = {}
    for name, best in (("erdos_min_overlap", 0.380927), ("autocorrelation_ac2", 0.97)):
        facts = task_facts(task_dir(name))
        tasks[name] = {
            "status": "done",
            "direction": facts.direction,
            "seed_score": facts.seed_score,
            "best_score": best,
            "records": [r.to_json() for r in facts.records],
        }
    table = rows(["erdos_min_overlap", "autocorrelation_ac2", "circle_packing_32"], tasks)
    assert [row[0] for row in table] == [
        "erdos_min_overlap (min)",
        "erdos_min_overlap (min)",
        "autocorrelation_ac2 (max)",
        "autocorrelation_ac2 (max)",
        "circle_packing_32",
    ]
    assert table[0][4:7] == (
        "0.380876",
        "TTT-Discover",
        "https://github.com/test-time-training/discover README.md (Mathematics table)",
    )
    assert float(table[0][7]) == pytest.approx(0.380927 - 0.380876)  # short of it: positive
    assert float(table[2][7]) == pytest.approx(0.9591 - 0.97)  # beaten: negative
    assert table[4][1] == "not run"
    text = markdown(table)
    assert text.splitlines()[0].startswith("| task | status | seed score | best found | record |")
    assert "Human-Agent-Society/reef" in text and text.count("\n") == 2 + len(table)


def test_a_suite_started_with_other_settings_is_refused(tmp_path):
    (tmp_path / "suite.json").write_text(
        json.dumps(
            {
                "schema": "atoll.discovery.suite/1",
                "identity": SuiteSettings(1).identity(),
                "steps": 1,
                "tasks": {},
            }
        )
    )
    assert load_record(tmp_path, SuiteSettings(5)).steps == 5  # more steps: a resume
    with pytest.raises(SuiteError, match="resume it with the same --agent, --env, --ak and --ae"):
        load_record(tmp_path, SuiteSettings(1, agent_kwargs=("training=off",)))


def test_an_unknown_task_is_refused_in_one_line_before_anything_runs(venv_bin, tmp_path):
    done = subprocess.run(
        [str(venv_bin / "atoll"), "suite", "run", "erdos_min_overlap", "no_such_task"]
        + ["--steps", "1", "--out", str(tmp_path / "suite")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: unknown task 'no_such_task'; known tasks: ")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "suite").exists()


# --- the real command -----------------------------------------------------------------------


class BetterConstruction(NumberedScript):
    """For whichever task asks: Haugland's Erdős function, or a published 26-circle packing."""

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        prompt = json.dumps(request["messages"])
        if "Erd\\u0151s" in prompt or "Erdős" in prompt:
            half = json.loads((DATA / "haugland_erdos_half.json").read_text())["half"]
            program = (
                f"import json\nhalf = {half!r}\nprint(json.dumps({{'h': half + half[-2::-1]}}))\n"
            )
        else:
            circles = json.loads((DATA / "ttt_discover_circles_26.json").read_text())["circles"]
            program = f"import json\nprint(json.dumps({{'circles': {circles!r}}}))\n"
        return Reply(
            content=f"<solution>\n```python\n{program}```\n</solution>\n<summary>Better.</summary>"
        )


def _suite(
    venv_bin: Path, work: Path, env: dict[str, str], *args: str, names: tuple[str, ...] = TASK_PAIR
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), "suite", "run", *names, "--out", str(work / "suite"), *args],
        capture_output=True,
        text=True,
        timeout=800,
        cwd=work,
        env=env,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_suite_searches_each_task_tabulates_the_records_and_resumes(
    tmp_path, venv_bin, reef_server, reset_reef_upstream, scripted_llm
):
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = BetterConstruction()
    (tmp_path / "roots").mkdir()
    env = {
        "PATH": f"{venv_bin}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TERM": "dumb",
        "ATOLL_LOCAL_ROOT": str(tmp_path / "roots"),
        "REEF_URL": reef_server.url,
        "REEF_TOKEN": reef_server.token,
        "OPENAI_API_KEY": "test-key-not-secret",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        **({"CI": os.environ["CI"]} if "CI" in os.environ else {}),
    }
    ak = ["--env", "atoll-local"]
    for pair in (
        "training=off",
        "groups=1",
        "rollouts=2",
        "executor=openai",
        f"executor_base_url={scripted_llm.base_url}",
        "executor_model=exec-model",
        "guidance_model=scripted",
    ):
        ak += ["--ak", pair]
    done = _suite(venv_bin, tmp_path, env, "--steps", "1", *ak)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = tmp_path / "suite"
    suite = json.loads((out / "suite.json").read_text())
    for name in TASK_PAIR:
        record = suite["tasks"][name]
        facts = task_facts(task_dir(name))
        assert record["status"] == "done" and record["steps_done"] == 1, record
        trial = json.loads((Path(record["trial"]) / "result.json").read_text())
        # The best found is what the trial's verifier scored the handed-in program.
        assert record["best_score"] == trial["verifier_result"]["rewards"]["raw_score"]
        assert record["best_score"] == trial["agent_result"]["metadata"]["best_raw_score"]
        assert record["seed_score"] == facts.seed_score  # the run's own seed node
        assert gap(facts.direction, record["best_score"], facts.seed_score) < 0, record
        assert [r["value"] for r in record["records"]] == [r.value for r in facts.records]
    table = (out / "suite.md").read_text()
    for name in TASK_PAIR:
        facts = task_facts(task_dir(name))
        best = suite["tasks"][name]["best_score"]
        for published in facts.records:
            (line,) = [
                row
                for row in table.splitlines()
                if f"| {published.source} |" in row and name in row
            ]
            assert f"| {published.value:.9g} |" in line and published.by in line
            assert line.rstrip(" |").endswith(f"{gap(facts.direction, best, published.value):.6g}")
    assert "0.380944" in table and "2.635983" in table
    assert "suite in" in done.stdout and "written:" in done.stdout

    # The same command again runs nothing: both searches already reached the steps.
    jobs_before = sorted(job for name in TASK_PAIR for job in (out / name / "jobs").iterdir())
    again = _suite(venv_bin, tmp_path, env, "--steps", "1", *ak)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.count("already searched to 1 step(s); kept") == 2
    assert sorted(job for name in TASK_PAIR for job in (out / name / "jobs").iterdir()) == (
        jobs_before
    )

    # Other agent settings are refused in one line, before anything runs.
    refused = _suite(venv_bin, tmp_path, env, "--steps", "1", *ak, "--ak", "rollouts=4")
    assert refused.returncode == 2 and "resume it with the same" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    # More steps resume a search from its state: a second step, the first kept.
    calls = scripted_llm.script.calls
    more = _suite(venv_bin, tmp_path, env, "--steps", "2", *ak, names=("erdos_min_overlap",))
    assert more.returncode == 0, more.stdout[-4000:] + more.stderr[-4000:]
    suite = json.loads((out / "suite.json").read_text())
    resumed = suite["tasks"]["erdos_min_overlap"]
    assert resumed["status"] == "done" and resumed["steps_done"] == 2
    lines = (Path(resumed["trial"]) / "agent" / "steps.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [0, 1]
    assert scripted_llm.script.calls == calls + 2  # one new step of two rollouts
    assert suite["tasks"]["circle_packing_26"]["steps_done"] == 1  # not named: left as it was

    # The table again, from suite.json alone.
    (out / "suite.md").unlink()
    shown = subprocess.run(
        [str(venv_bin / "atoll"), "suite", "table", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "written:" in shown.stdout and "0.380944" in (out / "suite.md").read_text()
