"""The importer on zips of each layout (built here, no downloads) and on bad zips."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from atoll.core.cli import main
from atoll.euler import importer
from atoll.euler import store as stores
from atoll.euler.store import Store

ATOLL = [str(Path(sys.executable).parent / "atoll")]


def make_zip(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)  # names as given, "../x" included
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def statement(number: int, extra: str = "") -> str:
    return f"<h2>Made-up problem {number}</h2><p>Compute the value number {number}.{extra}</p>"


@pytest.fixture
def import_cli(capsys: pytest.CaptureFixture[str]):
    """`atoll euler import` through the real entry point, in this process."""

    def run(zip_path: Path | None, store: Path, *more: str) -> Ran:
        args = (
            ["euler", "import"]
            + ([str(zip_path)] if zip_path else [])
            + ["--store", str(store), *more]
        )
        code = main(args)
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    return run


def test_the_installed_command_prints_one_line_for_a_bad_zip(tmp_path: Path) -> None:
    (tmp_path / "bad.zip").write_text("nope")
    args = [*ATOLL, "euler", "import", str(tmp_path / "bad.zip"), "--store", str(tmp_path / "s")]
    result = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'bad.zip'} is not a zip archive"
    ]


def test_html_files_with_solutions_md_and_resources(tmp_path: Path) -> None:
    members: dict[str, str | bytes] = {
        f"Project Euler/Problems/Problem {n:03d}.html": statement(n) for n in (1, 2, 3)
    }
    members["Project Euler/Problems/Problem 022.html"] = statement(
        22, ' Use <a href="resources/documents/0022_names.txt">this file</a>.'
    )
    members["Project Euler/resources/documents/0022_names.txt"] = '"ALICE","BOB"\n'
    members["Project Euler/Solutions.md"] = (
        "# Answers\n\nSome prose.\n\n1. 233168\n2. 4,613,732\n3. `6857`\n22. 871198282\n99. 709\n"
    )
    members["Project Euler/README.md"] = "not a statement"
    catalog = importer.read_zip(make_zip(tmp_path / "euler.zip", members))
    assert sorted(catalog.problems) == [1, 2, 3, 22]
    assert catalog.answers == {1: "233168", 2: "4613732", 3: "6857", 22: "871198282"}
    assert catalog.answers_without_statement == [99]
    assert catalog.problems[22].resources == ["0022_names.txt"]
    assert catalog.resources == {"0022_names.txt": b'"ALICE","BOB"\n'}
    assert "one file per problem" in catalog.source["layout"]["statements"][0]
    assert "Solutions.md" in catalog.source["layout"]["answers"][0]
    assert catalog.problems[22].source_url.endswith("problem=22")
    assert "(file: 0022_names.txt)" in catalog.problems[22].text


def test_one_csv_with_statements_and_answers(tmp_path: Path) -> None:
    rows = "ID,Title,Description,Answer\n"
    rows += '1,First,"Find the first value.\n\nIt is small.",10\n'
    rows += '2,Second,"<p>Find <b>the</b> second.</p>",20\n'
    rows += "3,Third,Find the third.,\n"
    catalog = importer.read_zip(make_zip(tmp_path / "csv.zip", {"kaggle/project_euler.csv": rows}))
    assert sorted(catalog.problems) == [1, 2, 3]
    assert catalog.problems[1].title == "First"
    assert "<p>Find the first value.</p>" in catalog.problems[1].html
    assert catalog.problems[2].text.startswith("Find the second.")
    assert catalog.answers == {1: "10", 2: "20"}
    available, why, _ = catalog.availability(3)
    assert not available and why == "no answer"


def test_statement_csv_and_answer_csv_with_a_missing_resource(tmp_path: Path) -> None:
    members = {
        "data/problems.csv": (
            "problem_id,html\n"
            '8,"<p>Digits in <a href=""project/resources/p008_digits.txt"">digits</a>.</p>"\n'
            '81,"<p>A <a href=""project/resources/p081_matrix.txt"">matrix</a>.</p>"\n'
        ),
        "data/answers.csv": "id,solution\n8,5832\n81,427337\n",
        "files/p008_digits.txt": "123456789\n",
    }
    catalog = importer.read_zip(make_zip(tmp_path / "two.zip", members))
    assert catalog.answers == {8: "5832", 81: "427337"}
    assert catalog.availability(8)[0] is True
    available, why, missing = catalog.availability(81)
    assert not available and missing == ["p081_matrix.txt"] and "missing resource" in why
    summary = catalog.summary()
    assert summary["missing_resources"] == {"81": ["p081_matrix.txt"]}


def test_text_statements_and_answers_txt(tmp_path: Path) -> None:
    members = {
        "euler/1.txt": "Sum the multiples.\n\nBelow 1000.",
        "euler/2.txt": "Even terms.",
        "euler/answers.txt": "1) 233168\n2: 4613732\n",
    }
    catalog = importer.read_zip(make_zip(tmp_path / "t.zip", members))
    assert catalog.answers == {1: "233168", 2: "4613732"}
    assert catalog.problems[1].text == "Sum the multiples.\n\nBelow 1000."


def test_text_form_statements_name_their_resources(tmp_path: Path) -> None:
    """CSV and text layouts have no links: the names in the text are the resources."""
    members = {
        "kaggle/problems.csv": (
            "id,title,problem_text\n"
            '22,Names scores,"Using names.txt, a 46K text file containing over five-thousand '
            'first names, begin by sorting it into alphabetical order."\n'
            '42,Coded triangle numbers,"Using words.txt, a 16K text file, how many are '
            'triangle words?"\n'
            '79,Passcode derivation,"The text file, keylog.txt, contains fifty successful '
            'login attempts."\n'
            "1,Multiples,Find the sum of all the multiples of 3 or 5 below 1000.\n"
        ),
        "kaggle/answers.csv": "id,answer\n1,233168\n22,871198282\n42,162\n79,73162890\n",
        "kaggle/resources/0022_names.txt": '"MARY","PATRICIA"\n',
        "kaggle/resources/p042_words.txt": '"A","ABILITY"\n',
    }
    catalog = importer.read_zip(make_zip(tmp_path / "text.zip", members))
    assert catalog.problems[22].resources == ["names.txt"]
    assert catalog.resources["names.txt"] == b'"MARY","PATRICIA"\n'
    assert catalog.resources["words.txt"] == b'"A","ABILITY"\n'
    assert catalog.availability(22)[0] is True and catalog.availability(42)[0] is True
    assert catalog.problems[1].resources == []  # "3 or 5 below 1000." names no file
    available, why, missing = catalog.availability(79)
    assert not available and missing == ["keylog.txt"] and "missing resource" in why


def test_a_text_resource_the_zip_lacks_makes_the_problem_unavailable(
    tmp_path: Path, import_cli
) -> None:
    members = {
        "p/1.txt": "Find the sum of the multiples of 3 or 5 below 1000.",
        "p/2.txt": "Using numbers.txt, find the largest.",
        "p/answers.txt": "1. 233168\n2. 99\n",
    }
    result = import_cli(make_zip(tmp_path / "t.zip", members), tmp_path / "store")
    assert result.returncode == 0
    from atoll.euler import Store

    store = Store(tmp_path / "store")  # `missing` is what stops the curriculum at a problem
    assert store.missing(1) is None
    assert store.missing(2) == ("problem 2 needs resource numbers.txt, which is not in the store")


def test_import_writes_the_store_with_a_private_answer_file(tmp_path: Path, import_cli) -> None:
    zip_path = make_zip(
        tmp_path / "e.zip",
        {
            "p/1.html": statement(1),
            "p/2.html": statement(2),
            "p/Solutions.md": "1. 233168\n",
        },
    )
    result = import_cli(zip_path, tmp_path / "store")
    assert result.returncode == 0, result.stderr
    assert "problems: 2  answers: 1" in result.stdout
    assert "unavailable: 1 (2: no answer)" in result.stdout
    store = Store(tmp_path / "store")
    private = tmp_path / "store" / stores.PRIVATE
    assert private.stat().st_mode & 0o777 == 0o700
    assert (private / stores.ANSWERS).stat().st_mode & 0o777 == 0o600
    assert store.expected(1) == "233168"
    assert store.missing(2) == "problem 2 is unavailable: no answer"
    public = [
        p for p in (tmp_path / "store").rglob("*") if p.is_file() and stores.PRIVATE not in p.parts
    ]
    assert public and all(b"233168" not in p.read_bytes() for p in public)
    index = json.loads((tmp_path / "store" / "store.json").read_text())
    assert index["source"]["kind"] == "zip" and len(index["source"]["sha256"]) == 64


def test_reimport_replaces_the_store_whole(tmp_path: Path, import_cli) -> None:
    first = make_zip(tmp_path / "a.zip", {"1.html": statement(1), "Solutions.md": "1. 5\n"})
    second = make_zip(tmp_path / "b.zip", {"7.html": statement(7), "Solutions.md": "7. 9\n"})
    assert import_cli(first, tmp_path / "s").returncode == 0
    assert import_cli(second, tmp_path / "s").returncode == 0
    assert Store(tmp_path / "s").numbers() == [7]
    assert not (tmp_path / "s" / "problems" / "0001.html").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _bomb() -> bytes:
    return b"\0" * (20 * 1024 * 1024)


BAD_ZIPS = {
    "not a zip": (None, "is not a zip archive"),
    "no statements": (
        {"README.md": "hello", "Solutions.md": "1. 5\n"},
        "no problem statements found",
    ),
    "answers do not parse": (
        {"1.html": statement(1), "Solutions.md": "1. 233168\n2.\n"},
        "does not parse as `N. answer`",
    ),
    "answers file without entries": (
        {"1.html": statement(1), "answers.md": "# nothing\n"},
        "its answers do not parse",
    ),
    "parent traversal": ({"1.html": statement(1), "../evil.html": "x"}, "unsafe member name"),
    "absolute member": ({"1.html": statement(1), "/etc/evil.txt": "x"}, "unsafe member name"),
    "zip bomb": (
        {"1.html": statement(1), "Solutions.md": "1. 5\n", "big.txt": _bomb()},
        "zip bomb",
    ),
    "contradicting answers": (
        {"1.html": statement(1), "Solutions.md": "1. 5\n", "answers.csv": "id,answer\n1,6\n"},
        "contradicts",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ZIPS))
def test_bad_zips_get_one_line_and_write_nothing(tmp_path: Path, case: str, import_cli) -> None:
    members, message = BAD_ZIPS[case]
    path = tmp_path / "bad.zip"
    if members is None:
        path.write_text("this is not a zip\n")
    else:
        make_zip(path, members)
    result = import_cli(path, tmp_path / "store")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "store").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.zip"]


def test_bad_zip_leaves_an_existing_store_as_it_was(tmp_path: Path, import_cli) -> None:
    good = make_zip(tmp_path / "good.zip", {"1.html": statement(1), "Solutions.md": "1. 5\n"})
    assert import_cli(good, tmp_path / "s").returncode == 0
    before = (tmp_path / "s" / "store.json").read_bytes()
    bad = make_zip(tmp_path / "bad.zip", {"../x.html": "x"})
    assert import_cli(bad, tmp_path / "s").returncode == 2
    assert (tmp_path / "s" / "store.json").read_bytes() == before


def test_refuses_a_non_store_directory(tmp_path: Path, import_cli) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    good = make_zip(tmp_path / "good.zip", {"1.html": statement(1), "Solutions.md": "1. 5\n"})
    result = import_cli(good, tmp_path / "mine")
    assert result.returncode == 2 and "not an Euler store" in result.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_store_inside_a_repository_must_be_ignored_by_it(tmp_path: Path, import_cli) -> None:
    good = make_zip(tmp_path / "good.zip", {"1.html": statement(1), "Solutions.md": "1. 5\n"})
    repository = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    refused = import_cli(good, repository / "data" / "euler")
    assert refused.returncode == 2 and "must never be committed" in refused.stderr
    assert not (repository / "data").exists()
    (repository / ".gitignore").write_text("euler/\n")
    assert import_cli(good, repository / "data" / "euler").returncode == 0
