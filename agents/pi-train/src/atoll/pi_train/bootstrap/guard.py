"""What the bootstrap corpus must never contain: Euler answers and Euler statement text.

The corpus teaches the tool protocol, not Project Euler: a conversation that
happens to print a store's answer (a sum of squares that equals 6857, say)
would teach the answer as a side effect. So every conversation is checked
against the answers of atoll-euler's sample store and of every store the
build names, and against the statements' text, and one that touches either
is drawn again.

Numbers are compared as whole tokens (a run of digits with an optional
minus), never as substrings, so `16857` does not hide `6857`; answers
shorter than `MIN_ANSWER_CHARS` are not checked, because one-to-three-digit
numbers are in every tool result (line numbers, exit codes, byte counts).
Statement text is compared as runs of `STATEMENT_NGRAM` consecutive words.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIN_ANSWER_CHARS = 4
STATEMENT_NGRAM = 8
_NUMBER = re.compile(r"-?\d+")
_WORD = re.compile(r"[a-z0-9]+")


def number_tokens(text: str) -> set[str]:
    """Every whole number in `text`, as written (a leading minus kept)."""
    return set(_NUMBER.findall(text))


def word_ngrams(text: str, n: int = STATEMENT_NGRAM) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@dataclass
class Guard:
    """The forbidden answers and statement n-grams, and where they came from."""

    answers: set[str] = field(default_factory=set)
    ngrams: set[tuple[str, ...]] = field(default_factory=set)
    sources: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, answers: Iterable[str], statements: Iterable[str]) -> None:
        kept = {a for a in answers if len(a.lstrip("-")) >= MIN_ANSWER_CHARS}
        texts = list(statements)
        self.answers |= kept
        for text in texts:
            self.ngrams |= word_ngrams(text)
        self.sources.append({"store": name, "answers_checked": len(kept), "statements": len(texts)})

    def violation(self, text: str) -> str | None:
        """Why `text` may not be in the corpus, or None when it may."""
        hit = sorted(number_tokens(text) & self.answers)
        if hit:
            return f"contains the Euler answer {hit[0]}"
        shared = word_ngrams(text) & self.ngrams
        if shared:
            return f"shares statement text: {' '.join(sorted(shared)[0])!r}"
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "sources": self.sources,
            "min_answer_chars": MIN_ANSWER_CHARS,
            "statement_ngram_words": STATEMENT_NGRAM,
        }


def default_guard(stores: Iterable[Path] = ()) -> Guard:
    """The sample store's answers and statements, then those of every store named."""
    from atoll.euler import Store, StoreError, normalize, sample_catalog

    guard = Guard()
    sample = sample_catalog()
    guard.add(
        "sample",
        (normalize(a) for a in sample.answers.values()),
        (p.text for p in sample.problems.values()),
    )
    for root in stores:
        store = Store(root)
        answers, statements = [], []
        for number in store.numbers():
            # A problem without an answer or statement has nothing to leak.
            with contextlib.suppress(StoreError):
                answers.append(normalize(store.expected(number)))
            with contextlib.suppress(StoreError):
                statements.append(store.statement_text(number))
        guard.add(f"{root.name} ({store.digest[:16]})", answers, statements)
    return guard
