"""Plain text and file references from a problem's HTML statement.

Models get the statement as text; the files a statement links to (a names
list, a matrix) are the problem's resources, copied into the rollout's
workspace under their own names. Images are listed but not required: a
text-only model cannot use them, and a missing picture must not stop a run.
"""

from __future__ import annotations

import html
import posixpath
import re
from html.parser import HTMLParser
from urllib.parse import unquote, urlparse

_BLOCKS = {"p", "div", "br", "h1", "h2", "h3", "h4", "li", "tr", "table", "blockquote", "pre"}
DATA_SUFFIXES = (".txt", ".csv", ".dat", ".json", ".tsv", ".xml", ".zip")
IMAGE_SUFFIXES = (".png", ".gif", ".jpg", ".jpeg", ".svg", ".webp")
_HTML_HINT = re.compile(
    r"<\s*(p|div|br|a|h\d|sup|sub|span|b|i|img|table|ul|ol|li|pre|code)\b", re.I
)


def looks_like_html(text: str) -> bool:
    return bool(_HTML_HINT.search(text))


def from_plain(text: str) -> str:
    """A plain-text statement as minimal HTML, paragraphs kept."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return "\n".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)


def reference_name(href: str) -> str | None:
    """The file name a link points to, if it points to a file rather than a page."""
    parsed = urlparse(href.strip())
    if parsed.scheme not in ("", "http", "https") or not parsed.path:
        return None
    name = posixpath.basename(unquote(parsed.path))
    if not name or "=" in name:
        return None
    return name


class _Extractor(HTMLParser):
    def __init__(self, resource_names: set[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.resources: list[str] = []
        self.images: list[str] = []
        self.title: str | None = None
        self._in_title = False
        self._title_parts: list[str] = []
        self._links: list[tuple[str | None, int]] = []
        self._resource_names = resource_names

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "h2" and self.title is None:
            self._in_title = True
        if tag == "sup":
            self.parts.append("^")
        elif tag == "sub":
            self.parts.append("_")
        elif tag == "a":
            name = reference_name(values.get("href") or "")
            is_file = name is not None and (
                name.lower().endswith(DATA_SUFFIXES) or name in self._resource_names
            )
            if is_file and name not in self.resources:
                assert name is not None
                self.resources.append(name)
            self._links.append((name if is_file else None, len(self.parts)))
        elif tag == "img":
            name = reference_name(values.get("src") or "")
            if name and name not in self.images:
                self.images.append(name)
            alt = values.get("alt")
            if alt:
                self.parts.append(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._links:
            name, start = self._links.pop()
            if name and "".join(self.parts[start:]).strip() != name:
                self.parts.append(f" (file: {name})")
        if tag == "h2" and self._in_title:
            self._in_title = False
            self.title = " ".join("".join(self._title_parts).split()) or None
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)
        if self._in_title:
            self._title_parts.append(data)


def extract(
    statement_html: str, resource_names: set[str] | None = None
) -> tuple[str, list[str], list[str], str | None]:
    """(text, linked data files, linked images, the first <h2> as title)."""
    parser = _Extractor(resource_names or set())
    parser.feed(statement_html)
    parser.close()
    raw = "".join(parser.parts)
    lines = [" ".join(line.split()) for line in raw.splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text, parser.resources, parser.images, parser.title
