"""The agent's README documents exactly the settings and executor presets the code has."""

from __future__ import annotations

from pathlib import Path

from atoll.guidance_ttt.config import IDENTITY_FIELDS, TINKER_IDENTITY_FIELDS, GuidanceConfig
from atoll.guidance_ttt.presets import PRESETS

README = Path(__file__).parents[2] / "agents" / "guidance-ttt" / "README.md"


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table after `heading`, cells stripped, header and rule dropped."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def _code(cell: str) -> str:
    return cell.split("*")[0].strip().strip("`")


def test_every_setting_is_documented_once_with_its_identity_mark():
    rows = _table("## Settings")
    assert [_code(row[0]) for row in rows] == list(GuidanceConfig.model_fields)
    starred = [_code(row[0]) for row in rows if row[0].endswith("*")]
    assert sorted(starred) == sorted(IDENTITY_FIELDS + TINKER_IDENTITY_FIELDS)


def test_the_executor_presets_table_is_the_presets_table():
    rows = _table("### Executor presets")
    documented = [
        (
            _code(row[0]),
            tuple(a.strip("` ") for a in row[1].split(",") if a.strip()),
            row[2].strip("`") if row[2].startswith("`") else None,
            row[3].strip("`"),
            None if row[5] == "none" else row[5].strip("`"),
            int(row[6]),
        )
        for row in rows
    ]
    actual = [
        (p.name, p.aliases, p.model, p.base_url, p.api_key_env, p.max_retries) for p in PRESETS
    ]
    assert documented == actual
    for row, preset in zip(rows, PRESETS, strict=True):
        if preset.temperature is not None:
            assert f"temperature {preset.temperature:g}" in row[4]
        if preset.reasoning_effort is not None:
            assert f"reasoning effort {preset.reasoning_effort}" in row[4]
