"""Fixtures of the Guidance-TTT core tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from guidance_builders import write_task

from atoll.guidance_ttt.contract import Task, load_task


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return load_task(write_task(tmp_path / "task"))
