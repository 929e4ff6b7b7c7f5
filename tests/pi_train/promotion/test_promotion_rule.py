"""The promotion rule file: what it accepts, what it refuses (one line each), its hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atoll.pi_train.promotion import rule as promotion_rule
from atoll.pi_train.promotion.rule import RuleError, Threshold

STRICT = {
    "format": 2,
    "checkpoints": 2,
    "transfer": {"min_delta": 0.1, "alpha": 0.1},
    "euler": {"min_delta": 0.0, "alpha": 0.05},
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("name", "text", "transfer", "euler", "checkpoints"),
    [
        ("rule.json", json.dumps(STRICT), Threshold(0.1, 0.1), Threshold(0.0, 0.05), 2),
        (
            "rule.toml",
            "format = 2\ncheckpoints = 2\n[transfer]\nmin_delta = 0.1\nalpha = 0.1\n"
            "[euler]\nmin_delta = 0\nalpha = 0.05\n",
            Threshold(0.1, 0.1),
            Threshold(0.0, 0.05),
            2,
        ),
        (
            "not-worse.json",
            '{"format": 2, "checkpoints": 1, "transfer": {"min_delta": -0.05, "alpha": 1},\n'
            ' "euler": {"alpha": 0.99, "min_delta": -1}}',
            Threshold(-0.05, 1.0),
            Threshold(-1.0, 0.99),
            1,
        ),
        (
            "edges.json",
            json.dumps(
                {
                    "format": 2,
                    "checkpoints": 40,
                    "transfer": {"min_delta": 1, "alpha": 1e-6},
                    "euler": {"min_delta": 0.25, "alpha": 0.01},
                }
            ),
            Threshold(1.0, 1e-6),
            Threshold(0.25, 0.01),
            40,
        ),
    ],
)
def test_honest_rule_files_are_read(
    tmp_path: Path, name: str, text: str, transfer: Threshold, euler: Threshold, checkpoints: int
) -> None:
    rule = promotion_rule.load(_write(tmp_path, name, text))
    assert (rule.transfer, rule.euler, rule.checkpoints) == (transfer, euler, checkpoints)


def test_the_same_rule_in_json_or_toml_has_one_hash(tmp_path: Path) -> None:
    from_json = promotion_rule.load(_write(tmp_path, "a.json", json.dumps(STRICT, indent=4)))
    toml = (
        "checkpoints = 2\nformat = 2\n[euler]\nalpha = 0.05\nmin_delta = 0.0\n"
        "[transfer]\nalpha = 0.1\nmin_delta = 0.1\n"
    )
    from_toml = promotion_rule.load(_write(tmp_path, "b.toml", toml))
    assert from_json.sha256() == from_toml.sha256()
    for n, other in enumerate(
        [{**STRICT, "transfer": {"min_delta": 0.05, "alpha": 0.1}}, {**STRICT, "checkpoints": 3}]
    ):
        changed = promotion_rule.load(_write(tmp_path, f"c{n}.json", json.dumps(other)))
        assert changed.sha256() != from_json.sha256()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "r.json",
            json.dumps({**STRICT, "euler": {"min_delta": 0, "alpha": 0.5, "alhpa": 1}}),
            "unknown field 'alhpa'",
        ),
        (
            "r.json",
            json.dumps({k: v for k, v in STRICT.items() if k != "euler"}),
            "the 'euler' section is missing",
        ),
        (
            "r.json",
            json.dumps({**STRICT, "transfer": {"min_delta": 0.1}}),
            "transfer.alpha is missing",
        ),
        (
            "r.json",
            json.dumps({**STRICT, "transfer": {"min_delta": 0.1, "alpha": 0}}),
            "alpha must lie in (0, 1]",
        ),
        (
            "r.json",
            json.dumps({**STRICT, "transfer": {"min_delta": 0.1, "alpha": 1.5}}),
            "alpha must lie in (0, 1]",
        ),
        (
            "r.json",
            json.dumps({k: v for k, v in STRICT.items() if k != "checkpoints"}),
            "the 'checkpoints' field is missing",
        ),
        ("r.json", json.dumps({**STRICT, "checkpoints": 0}), "checkpoints must be a whole"),
        ("r.json", json.dumps({**STRICT, "checkpoints": 1.5}), "checkpoints must be a whole"),
        ("r.json", json.dumps({**STRICT, "checkpoints": True}), "checkpoints must be a whole"),
        # The pooled rule of format 1 is refused, with what to write instead.
        (
            "r.json",
            json.dumps(
                {
                    "format": 1,
                    "transfer": {"min_delta": 0.1, "alpha": 0.05},
                    "euler": {"min_delta": 0.0, "alpha": 0.5},
                }
            ),
            "format 1 decides by Fisher's test on attempts pooled across problems",
        ),
        (
            "r.json",
            json.dumps({**STRICT, "euler": {"min_delta": 2, "alpha": 0.5}}),
            "min_delta must lie in [-1, 1]",
        ),
        (
            "r.json",
            json.dumps({**STRICT, "euler": {"min_delta": True, "alpha": 0.5}}),
            "must be a number",
        ),
        ("r.json", json.dumps({**STRICT, "format": 3}), "format must be 2"),
        (
            "r.json",
            json.dumps({**STRICT, "promote_anyway": True}),
            "unknown field 'promote_anyway'",
        ),
        ("r.json", '{"format": 2, "transfer": ', "not valid JSON"),
        ("r.toml", "format = \n", "not valid TOML"),
        ("r.yaml", "format: 1\n", "a rule file is .json or .toml"),
    ],
)
def test_rule_files_that_cannot_be_used_are_one_line_naming_the_field(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(RuleError) as caught:
        promotion_rule.load(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith(str(path))
    assert "\n" not in str(caught.value)


def test_a_missing_rule_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="cannot read the rule file"):
        promotion_rule.load(tmp_path / "absent.json")


@pytest.mark.parametrize(
    ("threshold", "delta", "p", "holds"),
    [
        (Threshold(0.1, 0.05), 0.2, 0.01, True),
        (Threshold(0.1, 0.05), 0.1, 0.05, True),
        (Threshold(0.1, 0.05), 0.09, 0.01, False),
        (Threshold(0.1, 0.05), 0.5, 0.06, False),
        (Threshold(0.0, 0.5), 0.0, 1.0, False),
        (Threshold(0.0, 0.5), None, None, False),
        # alpha 1: the delta alone decides, a "not worse than" guard.
        (Threshold(-0.05, 1.0), -0.05, 1.0, True),
        (Threshold(-0.05, 1.0), -0.06, 0.0, False),
    ],
)
def test_a_threshold_holds_only_when_both_numbers_clear_it(
    threshold: Threshold, delta: float | None, p: float | None, holds: bool
) -> None:
    assert threshold.holds(delta, p) is holds
