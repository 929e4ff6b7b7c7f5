"""The run explorer's page: self-contained, inert whatever the run's text holds, one-line errors.

The page a real run renders, opened in a real browser, is
`test_explorer_browser.py`; these check the parts that need neither.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

from typer.testing import CliRunner

from atoll.guidance_ttt.explore.cli import app
from atoll.guidance_ttt.explore.page import embed_json, render
from atoll.guidance_ttt.explore.view import OUTCOMES, outcome
from atoll.guidance_ttt.redaction import redact, secret_values
from atoll.guidance_ttt.search.scored_program import Status, Verification

HOSTILE = "</script><script>alert(1)</script><!-- & \u2028 \u2029 <b>"


def _view(guidance: str) -> dict:
    """A view with the shape `run_view` gives, one node carrying `guidance`."""
    return {
        "run": {"run_id": "r1", "best_id": 0},
        "nodes": [{"id": 0, "parent": None, "guidance": guidance, "program": "p"}],
        "rollouts": [],
        "steps": [],
        "programs": {"p": 'int main() { puts("</script>"); }'},
        "outcomes": list(OUTCOMES),
    }


def test_embedded_json_cannot_end_its_element_and_reads_back_whole():
    text = embed_json({"guidance": HOSTILE})
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(text) == {"guidance": HOSTILE}


def test_the_page_runs_only_its_own_script_and_loads_nothing():
    page = render(_view(HOSTILE))
    # The only elements are the page's own: one data element, one script, one style.
    assert re.findall(r"<script\b[^>]*>", page) == [
        '<script type="application/json" id="run-data">',
        "<script>",
    ]
    assert page.count("</script>") == 2 and HOSTILE not in page and "<b>" not in page
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    directives = dict(d.strip().split(" ", 1) for d in policy.group(1).split(";"))
    assert directives["default-src"] == "'none'"  # no fetch, frame, font or connection
    assert directives["img-src"] == "data:"
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert script is not None and style is not None
    for name, body in (("script-src", script.group(1)), ("style-src", style.group(1))):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert directives[name] == f"'sha256-{digest}'"  # that text, and nothing else, runs


def test_a_credential_a_model_repeated_is_not_on_the_page():
    key = "sk-test-9f8e7d6c5b4a3210"
    view = redact(_view(f"Use the key {key} for the API."), secret_values({"OPENAI_API_KEY": key}))
    page = render(view)
    assert key not in page and "Use the key [redacted] for the API." in page


def test_every_verdict_has_an_outcome_class():
    classes = {
        status: outcome(Verification(status, 1.0 if status is Status.VALID else None, 0.0))
        for status in Status
    }
    assert classes == {
        Status.VALID: "scored",
        Status.PARSE_ERROR: "parse_error",
        Status.GUIDANCE_REJECTED: "guidance_rejected",
        Status.GUIDANCE_FAILED: "guidance_failed",
        Status.INVALID: "judge_error",
        Status.COMPILE_ERROR: "judge_error",
        Status.RUNTIME_ERROR: "judge_error",
        Status.TIME_LIMIT: "judge_error",
        Status.MEMORY_LIMIT: "judge_error",
    }
    assert outcome(None) == "pending"
    assert outcome(Verification(Status.VALID, None, 0.0)) == "judge_error"  # valid, no score


def test_a_directory_without_a_run_is_one_error_line_and_nothing_written(tmp_path):
    runner = CliRunner()
    out = tmp_path / "page.html"
    for target, said in (
        (tmp_path / "missing", "is not a directory"),
        (tmp_path, "no Guidance-TTT run was started here"),
    ):
        done = runner.invoke(app, ["explore", str(target), "--out", str(out)])
        assert done.exit_code == 2
        lines = done.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0]
    assert not out.exists()
