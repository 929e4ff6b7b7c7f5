"""The tool declarations training shows a model are the ones the installed Pi sends.

`atoll.pi_train.shell.pi_tools` is the one copy of Pi 0.73.1's tool schemas and
result texts, used by shell RL and the bootstrap corpus alike; this test asks
the installed Pi itself (`createToolDefinition(name)` of its
`dist/core/tools/index.js`, through Node) and compares.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from support import ci

from atoll.pi_train.bootstrap import corpus
from atoll.pi_train.shell import pi_tools
from atoll.pi_train.shell.episode import TOOL_SPECS as SHELL_TOOLS

DUMP = """
const m = await import(process.argv[1]);
const out = [];
for (const name of JSON.parse(process.argv[2])) {
  const d = m.createToolDefinition(name, process.cwd());
  out.push({name: d.name, description: d.description,
            parameters: JSON.parse(JSON.stringify(d.parameters))});
}
console.log(JSON.stringify(out));
"""


def _pis_own_specs() -> list[dict]:
    from atoll.pi.install import PiUnavailable, installed

    try:
        pi, why = installed(), ""
    except PiUnavailable as exc:
        pi, why = None, f" ({exc})"
    # Skip here, fail in CI: there Pi is installed and the comparison must really run.
    ci.need(
        pi is not None,
        f"Pi 0.73.1 is not installed here{why}; `atoll pi install` installs it",
        "CI installs Pi (`atoll pi install`) before the tests",
    )
    assert pi is not None
    index = pi.package_dir / "dist" / "core" / "tools" / "index.js"
    done = subprocess.run(
        [
            str(pi.node.path),
            "--input-type=module",
            "-e",
            DUMP,
            index.as_uri(),
            json.dumps(list(pi_tools.TOOL_NAMES)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_schemas_are_what_the_installed_pi_declares() -> None:
    assert _pis_own_specs() == pi_tools.TOOL_SPECS


def test_shell_rl_and_the_bootstrap_share_the_one_copy() -> None:
    assert SHELL_TOOLS is pi_tools.TOOL_SPECS and corpus.TOOLS is pi_tools.TOOL_SPECS


@pytest.mark.parametrize(
    ("output", "code", "expected"),
    [
        ("42\n", 0, "42\n"),
        ("", 0, "(no output)"),
        ("Traceback ...\nNameError\n", 1, "Traceback ...\nNameError\n\nCommand exited with code 1"),
        ("", 2, "Command exited with code 2"),
        ("partial\n", None, "partial\n\nCommand timed out after 2 seconds"),
    ],
)
def test_bash_results_are_worded_as_pi_words_them(
    output: str, code: int | None, expected: str
) -> None:
    assert pi_tools.ran(output, code, 2.0) == expected
