"""Read a local Project Euler zip into a `Catalog`, detecting its layout; nothing is extracted.

Layouts differ between the published datasets, so the importer looks at
what is there instead of expecting one shape:

- statements: one HTML (or text) file per problem, the number taken from the
  file name (`1.html`, `Problem 001.html`, `p1.htm`), and/or a CSV with an id
  column and an HTML or text content column;
- answers: `N. answer` lines in a text or Markdown file whose name says
  solutions or answers, and/or a CSV with id and answer columns (the
  statements CSV may carry them);
- resources: any other member whose file name a statement links to (HTML),
  or, in a statement with no links (the text and CSV layouts), names in its
  text: `names.txt` is the member `names.txt`, or the problem's own
  `0022_names.txt` / `p022_names.txt`. A named resource the zip lacks makes
  the problem unavailable (the curriculum stops there).

Members are read from the archive into memory with a cap each; a zip that is
not one, has unsafe member names, looks like a bomb, has no statements or has
answers that do not parse is refused with one `ImportError_` line before
anything is written.
"""

from __future__ import annotations

import csv
import hashlib
import io
import posixpath
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.sizes import GiB, MiB
from atoll.euler import answers as answer_format
from atoll.euler import htmltext
from atoll.euler.store import Catalog, Problem

MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 64 * MiB
MAX_TOTAL_BYTES = GiB
MAX_RATIO = 200  # uncompressed / compressed, for members over RATIO_FLOOR
RATIO_FLOOR = MiB
SOURCE_URL = "https://projecteuler.net/problem={number}"

_STATEMENT_FILE = re.compile(r"^(?:problem|prob|p|euler)?[\s_#-]*0*(\d{1,4})$", re.I)
_STATEMENT_SUFFIXES = (".html", ".htm", ".txt", ".md")
_ANSWERS_NAME = re.compile(r"(solution|answer)", re.I)
_ANSWER_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:problem\s*)?(\d+)\s*[.:)]\s*(.*?)\s*$", re.I)
_NUMBER_START = re.compile(r"^\s*(?:[-*]\s*)?(?:problem\s*)?\d+\b", re.I)

_ID_COLUMNS = ("id", "problemid", "problemnumber", "number", "pid", "no", "num", "problem", "#")
_CONTENT_COLUMNS = (
    "html",
    "problemhtml",
    "content",
    "problemcontent",
    "statement",
    "problemstatement",
    "description",
    "problemdescription",
    "text",
    "problemtext",
    "body",
    "question",
    "problem",
)
_TITLE_COLUMNS = ("title", "problemtitle", "name", "problemname")
_ANSWER_COLUMNS = ("answer", "answers", "solution", "problemanswer", "result")
_URL_COLUMNS = ("url", "link", "sourceurl", "source", "problemurl")


class ImportError_(Exception):  # noqa: N801  (ImportError is Python's own)
    """The zip cannot be imported; the message is the one line the user sees."""


@dataclass
class _Member:
    name: str
    info: zipfile.ZipInfo

    @property
    def base(self) -> str:
        return posixpath.basename(self.name)

    @property
    def suffix(self) -> str:
        return posixpath.splitext(self.base)[1].lower()


def read_zip(path: Path) -> Catalog:
    """The catalog of the zip at `path`, or ImportError_ with one clear line."""
    try:
        data_size = path.stat().st_size
    except OSError as exc:
        raise ImportError_(f"cannot read {path}: {exc.strerror}") from None
    if not zipfile.is_zipfile(path):
        raise ImportError_(f"{path} is not a zip archive")
    try:
        with zipfile.ZipFile(path) as archive:
            members = _safe_members(archive)
            catalog = _catalog(archive, members)
    except zipfile.BadZipFile as exc:
        raise ImportError_(f"{path} is a damaged zip archive: {exc}") from None
    except (OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise ImportError_(f"{path} cannot be read: {exc}") from None
    catalog.source = {
        **catalog.source,
        "kind": "zip",
        "name": path.name,
        "bytes": data_size,
        "sha256": _sha256_file(path),
    }
    return catalog


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(MiB), b""):
            digest.update(block)
    return digest.hexdigest()


def _safe_members(archive: zipfile.ZipFile) -> list[_Member]:
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ImportError_(f"the zip has {len(infos)} members (more than {MAX_MEMBERS}): refused")
    total = 0
    members = []
    for info in infos:
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
            raise ImportError_(
                f"unsafe member name {name!r} (absolute or parent traversal): refused"
            )
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ImportError_(f"member {name!r} is a symbolic link: refused")
        if info.flag_bits & 0x1:
            raise ImportError_(f"member {name!r} is encrypted: refused")
        if info.is_dir():
            continue
        total += info.file_size
        if info.file_size > MAX_MEMBER_BYTES:
            raise ImportError_(
                f"member {name!r} expands to {info.file_size} bytes (more than "
                f"{MAX_MEMBER_BYTES}): refused as a possible zip bomb"
            )
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ImportError_(
                f"member {name!r} expands {info.file_size // max(info.compress_size, 1)}-fold: "
                "refused as a zip bomb"
            )
        if total > MAX_TOTAL_BYTES:
            raise ImportError_(
                f"the zip expands to more than {MAX_TOTAL_BYTES} bytes: refused as a zip bomb"
            )
        if parts[0] == "__MACOSX" or posixpath.basename(name).startswith("._"):
            continue
        members.append(_Member(name, info))
    return members


def _read(archive: zipfile.ZipFile, member: _Member) -> bytes:
    """A member's bytes, never more than the cap whatever its header claims."""
    with archive.open(member.info) as handle:
        data = handle.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise ImportError_(
            f"member {member.name!r} expands past {MAX_MEMBER_BYTES} bytes: refused as a zip bomb"
        )
    return data


def _text(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _key(column: str) -> str:
    return re.sub(r"[\s_\-.]", "", column.strip().lower())


@dataclass
class _Statement:
    number: int
    html: str
    title: str | None
    url: str | None
    origin: str


def _catalog(archive: zipfile.ZipFile, members: list[_Member]) -> Catalog:
    statements: dict[int, _Statement] = {}
    answers: dict[int, str] = {}
    layout: dict[str, list[str]] = {"statements": [], "answers": []}
    file_statements = [m for m in members if _statement_number(m) is not None]
    for member in file_statements:
        number = _statement_number(member)
        assert number is not None
        content = _text(_read(archive, member))
        html = (
            content
            if member.suffix in (".html", ".htm") or htmltext.looks_like_html(content)
            else htmltext.from_plain(content)
        )
        if number in statements and statements[number].html != html:
            raise ImportError_(
                f"two different statements for problem {number}: "
                f"{statements[number].origin} and {member.name}"
            )
        statements[number] = _Statement(number, html, None, None, member.name)
    if file_statements:
        folders = sorted({posixpath.dirname(m.name) or "." for m in file_statements})
        layout["statements"].append(
            f"one file per problem ({len(file_statements)} in {', '.join(folders)})"
        )

    for member in members:
        if member.suffix != ".csv":
            continue
        rows, columns = _csv(archive, member)
        _from_csv(member, rows, columns, statements, answers, layout)

    for member in members:
        if (
            member.suffix in (".md", ".txt", ".markdown")
            and _ANSWERS_NAME.search(member.base)
            and _statement_number(member) is None
        ):
            found = _answer_lines(member, _text(_read(archive, member)))
            _merge_answers(answers, found, member.name)
            layout["answers"].append(f"`N. answer` lines ({member.name})")

    if not statements:
        raise ImportError_(
            "no problem statements found: expected one HTML file per problem (e.g. 1.html) "
            "or a CSV with an id column and an HTML or text content column"
        )
    names = {m.base for m in members}
    problems: dict[int, Problem] = {}
    renamed: dict[str, str] = {}  # resource name as the statement says it -> member base name
    for number in sorted(statements):
        item = statements[number]
        text, linked, images, title = htmltext.extract(item.html, names)
        if not linked:
            for name in _named_files(text):
                found_as = _member_for(name, number, names)
                if found_as is not None and found_as != name:
                    renamed.setdefault(name, found_as)
                linked.append(name)
        problems[number] = Problem(
            number=number,
            title=item.title or title or f"Problem {number}",
            html=item.html,
            text=text,
            source_url=item.url or SOURCE_URL.format(number=number),
            resources=linked,
            images=images,
        )
    wanted = {name for p in problems.values() for name in p.resources}
    sources = {renamed.get(name, name): name for name in wanted}
    resources: dict[str, bytes] = {}
    for member in members:
        wanted_as = sources.get(member.base)
        if (
            wanted_as is not None
            and wanted_as not in resources
            and _statement_number(member) is None
        ):
            resources[wanted_as] = _read(archive, member)
    return Catalog(
        problems=problems,
        answers={n: a for n, a in answers.items() if n in problems},
        resources=resources,
        source={"layout": layout},
        answers_without_statement=sorted(n for n in answers if n not in problems),
    )


_NAMED_FILE = re.compile(
    r"(?<![\w/.:-])([A-Za-z0-9][\w-]*(?:\.[\w-]+)*("
    + "|".join(re.escape(s) for s in htmltext.DATA_SUFFIXES)
    + r"))(?![\w-])",
    re.I,
)


def _named_files(text: str) -> list[str]:
    """Data file names a text statement mentions (`names.txt`, `0022_names.txt`), in order."""
    found: list[str] = []
    for match in _NAMED_FILE.finditer(text):
        if match.group(1) not in found:
            found.append(match.group(1))
    return found


def _member_for(name: str, number: int, members: set[str]) -> str | None:
    """The zip member a statement's file name means: itself, or the problem's numbered copy."""
    if name in members:
        return name
    numbered = re.compile(rf"^(?:p|problem)?0*{number}[_-]{re.escape(name)}$", re.I)
    matches = sorted(m for m in members if numbered.match(m))
    return matches[0] if matches else None


def _statement_number(member: _Member) -> int | None:
    if member.suffix not in _STATEMENT_SUFFIXES:
        return None
    stem = posixpath.splitext(member.base)[0]
    match = _STATEMENT_FILE.match(stem)
    if not match:
        return None
    number = int(match.group(1))
    return number if number > 0 else None


def _csv(archive: zipfile.ZipFile, member: _Member) -> tuple[list[dict[str, str]], dict[str, str]]:
    text = _text(_read(archive, member))
    csv.field_size_limit(MAX_MEMBER_BYTES)
    try:
        dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.DictReader(io.StringIO(text), dialect=dialect)
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise ImportError_(f"{member.name} is not a readable CSV: {exc}") from None
    columns = {_key(c): c for c in (reader.fieldnames or []) if c is not None}
    return rows, columns


def _pick(columns: dict[str, str], wanted: tuple[str, ...], taken: set[str]) -> str | None:
    for key in wanted:
        if key in columns and columns[key] not in taken:
            return columns[key]
    return None


def _from_csv(
    member: _Member,
    rows: list[dict[str, str]],
    columns: dict[str, str],
    statements: dict[int, _Statement],
    answers: dict[int, str],
    layout: dict[str, list[str]],
) -> None:
    id_column = None
    for key in _ID_COLUMNS:
        column = columns.get(key)
        if column and all(
            _int((row.get(column) or "").strip()) is not None
            for row in rows
            if (row.get(column) or "").strip()
        ):
            id_column = column
            break
    if id_column is None:
        return
    taken = {id_column}
    content = _pick(columns, _CONTENT_COLUMNS, taken)
    answer = _pick(columns, _ANSWER_COLUMNS, taken | ({content} if content else set()))
    title = _pick(columns, _TITLE_COLUMNS, taken)
    url = _pick(columns, _URL_COLUMNS, taken)
    if content is None and answer is None:
        return
    found_statements = found_answers = 0
    parsed: dict[int, str] = {}
    for line, row in enumerate(rows, start=2):
        raw_id = (row.get(id_column) or "").strip()
        if not raw_id:
            continue
        number = _int(raw_id)
        assert number is not None
        if content is not None:
            body = row.get(content) or ""
            if body.strip() and number not in statements:
                html = body if htmltext.looks_like_html(body) else htmltext.from_plain(body)
                statements[number] = _Statement(
                    number,
                    html,
                    (row.get(title) or "").strip() or None if title else None,
                    (row.get(url) or "").strip() or None if url else None,
                    f"{member.name} line {line}",
                )
                found_statements += 1
        if answer is not None:
            value = (row.get(answer) or "").strip()
            if value:
                try:
                    parsed[number] = answer_format.checked(value)
                except answer_format.AnswerFormatError as exc:
                    raise ImportError_(
                        f"{member.name} line {line}: the answer of problem {number} does not parse: {exc}"
                    ) from None
                found_answers += 1
    if content is not None and found_statements:
        layout["statements"].append(f"CSV {member.name} (id={id_column}, content={content})")
    if answer is not None:
        if rows and not found_answers and content is None:
            raise ImportError_(f"{member.name}: the answer column {answer!r} has no answers")
        _merge_answers(answers, parsed, member.name)
        layout["answers"].append(f"CSV {member.name} (id={id_column}, answer={answer})")


def _int(text: str) -> int | None:
    text = text.strip().lstrip("#")
    if re.fullmatch(r"\d{1,6}", text) and int(text) > 0:
        return int(text)
    return None


def _answer_lines(member: _Member, text: str) -> dict[int, str]:
    """`N. answer` entries; a numbered line that does not parse is an error."""
    found: dict[int, str] = {}
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not _NUMBER_START.match(line):
            continue
        match = _ANSWER_LINE.match(line)
        value = match.group(2).strip().strip("`*_").strip() if match else ""
        if not match or not value:
            raise ImportError_(
                f"{member.name} line {line_number}: {line.strip()[:60]!r} does not parse as `N. answer`"
            )
        number = int(match.group(1))
        try:
            value = answer_format.checked(value)
        except answer_format.AnswerFormatError as exc:
            raise ImportError_(f"{member.name} line {line_number}: {exc}") from None
        if number in found and found[number] != value:
            raise ImportError_(
                f"{member.name} line {line_number}: a second, different answer for problem {number}"
            )
        found[number] = value
    if not found:
        raise ImportError_(f"{member.name} has no `N. answer` lines: its answers do not parse")
    return found


def _merge_answers(answers: dict[int, str], found: dict[int, str], origin: str) -> None:
    for number, value in found.items():
        if number in answers and answers[number] != value:
            raise ImportError_(
                f"{origin} gives problem {number} the answer that another file contradicts"
            )
        answers[number] = value


def describe(catalog: Catalog) -> dict[str, Any]:
    """What an import found, for printing (no answers)."""
    return {"source": catalog.source, **catalog.summary()}
