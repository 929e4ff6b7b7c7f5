"""The built-in sample: ten problems in our words, answers computed into the private part only."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from atoll.core.cli import main
from atoll.euler import sample
from atoll.euler.sample import reference
from atoll.euler.store import Store


def test_sample_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["euler", "import", "--sample", "--store", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "problems: 10  answers: 10  resources: 1" in out
    store = Store(tmp_path / "s")
    assert store.numbers() == list(range(1, 11))
    assert all(store.missing(n) is None for n in store.numbers())
    # two answers checked by hand: 3+5+6+9+... below 1000, and (1+..+100)^2 - (1^2+..+100^2)
    assert (
        store.expected(1)
        == str(sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0))
        == "233168"
    )
    assert store.expected(6) == "25164150"
    assert store.entry(8).resources == ("digits.txt",)
    digits = store.resource_path("digits.txt").read_text().strip()
    assert len(digits) == 1000 and digits.startswith("14142135623730950488")
    answers_file = tmp_path / "s" / "private" / "answers.json"
    assert answers_file.stat().st_mode & 0o777 == 0o600
    assert json.loads(answers_file.read_text())["answers"]["1"] == "233168"


def test_no_answer_is_stored_in_the_package() -> None:
    """The sample's answers exist only once computed: no file shipped in the package holds one."""
    computed = sample.answers()
    root = Path(str(resources.files("atoll.euler")))
    shipped = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert shipped
    for path in shipped:
        data = path.read_bytes()
        for number, answer in computed.items():
            if len(answer) >= 5:  # short ones (6857) could occur by chance in data
                assert answer.encode() not in data, f"answer {number} appears in {path}"


def test_pinned_digest_catches_a_changed_solution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(reference.SOLUTIONS, 6, lambda: 25164151)
    with pytest.raises(sample.SampleError, match="digest"):
        sample.answers()


def test_statements_are_plain_text_with_no_markup() -> None:
    catalog = sample.catalog()
    for problem in catalog.problems.values():
        assert not re.search(r"</?[a-z]", problem.text) and problem.title in problem.text
