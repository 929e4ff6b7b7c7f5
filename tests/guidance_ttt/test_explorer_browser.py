"""The run explorer of a real search-only run, opened in Debian's headless Chromium.

The run is real but for its two models: the real Reef in front of a scripted
guidance model whose guidance carries markup that would run as script if
the page embedded it unescaped, a scripted executor writing real C++
packers (and, on cue, a program that does not compile and an answer with no
program), and the real embedded judge. It is killed in its second step,
explored as it lies, resumed to its end and explored again while its lock
is held, as a running run holds it. The page is checked as a person would
use it: no console error and no request beyond the file itself, every
archive node in the tree, a click on the best node showing its guidance and
program, the outcome and step filters. Its screenshot is kept: in the test's
directory, and in `$ATOLL_TEST_ARTIFACTS` when set (which is how the
README's picture is made).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from explorer_run import INJECTION, MarkupGuidance, SometimesNoProgram
from headless_chromium import Page, executable, launch
from support.ci import need
from test_faults_kill_and_resume import Driver, killing

from atoll.guidance_ttt.state.durable_archive import Library
from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, run_dir

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ARTIFACTS_ENV = "ATOLL_TEST_ARTIFACTS"
SCREENSHOT = "guidance-explorer.png"
GRID = {"groups": 2, "rollouts": 3, "steps": 3}
# Driver's runs hold this executor key in their environment; no page may show it.
RUN_KEY = "test-key-not-secret"


DATA_OPENING = '<script type="application/json" id="run-data">'


def _data_bounds(page: str) -> tuple[int, int]:
    start = page.index(DATA_OPENING) + len(DATA_OPENING)
    return start, page.index("</script>", start)


def _without_data(page: str) -> str:
    """The page's markup, script and style: everything but the run's data."""
    start, end = _data_bounds(page)
    return page[:start] + page[end:]


def _explore(venv_bin: Path, state_dir: Path, out: Path) -> tuple[str, dict[str, Any]]:
    """`atoll guidance explore` in an environment without the run's credentials: whatever the
    page holds came from the state directory, not from a redaction at render time."""
    done = subprocess.run(
        [str(venv_bin / "atoll"), "guidance", "explore", str(state_dir), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{venv_bin}:/usr/bin:/bin", "HOME": str(out.parent), "TERM": "dumb"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out}")
    page = out.read_text(encoding="utf-8")
    start, end = _data_bounds(page)
    return page, json.loads(page[start:end])


def _until(check: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.05)


def _visible(page: Page, selector: str) -> int:
    return int(page.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length"))


def test_the_explorer_of_a_killed_then_finished_run_in_headless_chromium(
    tmp_path, venv_bin, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    need(executable() is not None, "Debian's chromium is not installed", "apt-get install chromium")
    reset_reef_upstream.script = MarkupGuidance()
    driver = Driver(tmp_path, reef_server, scripted_llm.base_url, judge_url)
    # Step 0 makes 5 executor calls (one guidance of 6 is malformed): the 7th is in step 1.
    scripted_llm.script = killing(SometimesNoProgram(), 7, driver)
    killed = driver.start(**GRID)
    killed.communicate(timeout=240)
    assert killed.returncode == -signal.SIGKILL, "the kill point was never reached"

    # --- a killed run: step 0 committed, step 1 journaled in part ------------------------------
    killed_page, killed_data = _explore(venv_bin, driver.state_dir, tmp_path / "killed.html")
    run = killed_data["run"]
    assert (run["committed_steps"], run["journaled_steps"]) == (1, 2)
    open_step = [r for r in killed_data["rollouts"] if r["step"] == 1]
    assert any(r["outcome"] == "pending" for r in open_step)  # its executor call was cut off

    # --- resumed to its end, explored while the run's lock is held ----------------------------
    scripted_llm.script = SometimesNoProgram()
    code, _, err = driver.finish(**GRID)
    assert code == 0, err[-3000:]
    out = tmp_path / "explorer.html"
    with Library.open(driver.state_dir):
        page_text, data = _explore(venv_bin, driver.state_dir, out)
    archive = json.loads((run_dir(driver.state_dir) / COMMITTED_FILE).read_text())["archive"]
    best = next(n for n in archive["nodes"] if n["id"] == archive["best_id"])
    assert best["parent"] is not None and INJECTION in best["entry"]["guidance"]
    outcomes = {r["outcome"] for r in data["rollouts"]}
    assert {"scored", "parse_error", "judge_error", "guidance_rejected"} <= outcomes
    assert len(data["rollouts"]) == 18 and "pending" not in outcomes

    for text in (killed_page, page_text):  # self-contained, inert, no credential
        markup = _without_data(text)
        assert len(re.findall(r"<script\b", markup)) == 2 and "<link" not in markup
        assert not re.search(r"\b(src|href)\s*=", markup)
        assert INJECTION not in text and "<img" not in text and "</script><script>" not in text
        assert RUN_KEY not in text and reef_server.token not in text

    with launch(tmp_path / "profile") as browser:
        page = browser.open_page()
        page.navigate(Path(tmp_path / "killed.html").as_uri())
        assert page.console_errors() == []
        assert _visible(page, "#tree .visit.o-pending") >= 1

        page.navigate(out.as_uri())
        shown = page.evaluate(
            "[...document.querySelectorAll('#tree [data-node-id]')]"
            ".map(e => Number(e.getAttribute('data-node-id')))"
        )
        assert sorted(shown) == sorted(n["id"] for n in archive["nodes"])
        visits = [r for r in data["rollouts"] if not r["child_kept"]]
        assert _visible(page, "#tree .visit") == len(visits)

        page.click(f'#tree [data-node-id="{best["id"]}"]')
        _until(lambda: page.evaluate("location.hash") == f"#node-{best['id']}", "the click")
        detail = "document.querySelector('#detail pre.{}').textContent"
        # The page shows the node on `hashchange`, an event that runs after the click returns.
        shown_detail = "document.querySelector('#detail pre.guidance') !== null"
        _until(lambda: page.evaluate(shown_detail), "the node's detail")
        assert page.evaluate(detail.format("guidance")) == best["entry"]["guidance"]
        assert page.evaluate(detail.format("program")) == best["entry"]["program"]
        assert page.evaluate("typeof window.pwned") == "undefined"

        # Outcome filter: judge errors hidden and shown again; the tree keeps every node.
        judge_errors = "#tree .visit.o-judge_error:not(.hidden)"
        expected = sum(1 for r in visits if r["outcome"] == "judge_error")
        assert expected > 0 and _visible(page, judge_errors) == expected
        page.click("#outcome-judge_error")
        assert _visible(page, judge_errors) == 0
        assert _visible(page, "#tree .visit:not(.hidden)") == len(visits) - expected
        page.click("#outcome-judge_error")
        assert _visible(page, judge_errors) == expected
        # Step filter: the rollouts table keeps step 2's rows only.
        page.evaluate(
            "(() => { const s = document.getElementById('step-filter'); s.value = '2';"
            " s.dispatchEvent(new Event('change')); })()"
        )
        rows = "#rollout-table tr[data-rollout-id]:not(.hidden)"
        assert _visible(page, rows) == 6
        assert page.evaluate(
            f"[...document.querySelectorAll({json.dumps(rows)})]"
            ".every(r => r.getAttribute('data-rollout-id').startsWith('2-'))"
        )
        page.evaluate(
            "(() => { const s = document.getElementById('step-filter'); s.value = 'all';"
            " s.dispatchEvent(new Event('change')); })()"
        )

        page.evaluate("window.scrollTo(0, 0)")
        shot = page.screenshot(tmp_path / SCREENSHOT)
        assert page.console_errors() == []
        assert page.requests() == [out.as_uri()]  # nothing fetched beyond the file itself
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    kept = os.environ.get(ARTIFACTS_ENV)
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(kept) / SCREENSHOT)
