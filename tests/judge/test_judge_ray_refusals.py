"""Asking for the judge on Ray wrongly costs one clear line, before anything starts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.ports import free_port

from atoll.judge.job_plugin import FrontierCSJudgePlugin


def _serve(venv_bin: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [str(venv_bin / "atoll"), "judge", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 2, done.stderr
    return [line for line in done.stderr.splitlines() if line.strip()]


def test_without_ray_installed_the_line_names_the_extra(venv_bin: Path, tmp_path: Path) -> None:
    # A `ray` that cannot be imported, as on a machine without the extra.
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text('raise ImportError("No module named ray")\n')
    lines = _serve(venv_bin, "--ray", "auto", env={"PYTHONPATH": str(tmp_path)})
    assert lines == [
        "error: judging on a Ray cluster needs Ray on this machine: "
        "pip install 'atoll-frontiercs-judge[ray]'"
    ]


def test_workers_do_not_apply_on_a_cluster(venv_bin: Path) -> None:
    lines = _serve(venv_bin, "--ray", "auto", "--workers", "2")
    assert len(lines) == 1 and "--workers does not apply with --ray" in lines[0]


@pytest.mark.slow
def test_a_head_that_does_not_answer_is_refused_at_once(venv_bin: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    lines = _serve(venv_bin, "--ray", address)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: cannot reach the Ray cluster's head at {address}")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"ray": " "}, "ray= needs the address of a Ray cluster's head (host:port) or auto"),
        ({"workers": 3}, "this plugin takes one option, ray=ADDRESS|auto (got workers)"),
    ],
)
def test_the_job_plugin_takes_ray_and_nothing_else(options: dict[str, object], said: str) -> None:
    with pytest.raises(SystemExit, match=r"^frontiercs-judge: error: ") as refused:
        FrontierCSJudgePlugin(**options)
    assert said in str(refused.value)
