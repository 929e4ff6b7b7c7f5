"""The language matrix: each language's runtime, program file suffixes and forbidden flags.

Julia is part of the matrix but the rollout image lacks it, so a Julia
attempt is refused with one line rather than run and scored as a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Runtime:
    language: str
    command: str  # what the prompt tells the model to run: `python3 FILE`
    names: re.Pattern[str]  # the interpreter names that count as this runtime
    suffixes: tuple[str, ...]
    default_file: str
    # Flags that run code given on the command line or stdin instead of a file.
    inline_flags: frozenset[str]
    # Flags that are harmless and take no argument.
    plain_flags: frozenset[str]
    # Flags that take one argument (skipped with it), e.g. python's `-W error`.
    flags_with_argument: frozenset[str] = frozenset()


RUNTIMES: dict[str, Runtime] = {
    "python": Runtime(
        "python",
        "python3",
        re.compile(r"^python(?:3(?:\.\d+)?)?$"),
        (".py",),
        "solution.py",
        frozenset({"-c", "-m", "-", "-i", "--command"}),
        frozenset({"-u", "-B", "-O", "-OO", "-E", "-s", "-S", "-I", "-P", "-q", "-b", "-bb"}),
        frozenset({"-W", "-X"}),
    ),
    "javascript": Runtime(
        "javascript",
        "node",
        re.compile(r"^(?:node|nodejs)$"),
        (".js", ".mjs", ".cjs"),
        "solution.js",
        frozenset(
            {
                "-e",
                "--eval",
                "-p",
                "--print",
                "-r",
                "--require",
                "--import",
                "-",
                "-i",
                "--interactive",
                "--input-type",
                "--loader",
                "--experimental-loader",
            }
        ),
        frozenset({"--no-warnings", "--trace-uncaught", "--enable-source-maps", "--use-strict"}),
        frozenset({"--max-old-space-size", "--stack-size"}),
    ),
    "julia": Runtime(
        "julia",
        "julia",
        re.compile(r"^julia$"),
        (".jl",),
        "solution.jl",
        frozenset({"-e", "--eval", "-E", "--print", "-L", "--load", "-i", "-"}),
        frozenset({"-q", "--quiet", "--color=no", "--startup-file=no"}),
        frozenset({"-t", "--threads", "-O", "--optimize"}),
    ),
}

LANGUAGES = tuple(RUNTIMES)


def runtime_for_interpreter(word: str) -> Runtime | None:
    """The runtime whose interpreter `word` (a command's first word) names, if any."""
    name = word.rsplit("/", 1)[-1]
    for runtime in RUNTIMES.values():
        if runtime.names.match(name):
            return runtime
    return None


class LanguageError(ValueError):
    """A language outside the matrix, or one the image cannot run."""


def parse_languages(text: str, available: frozenset[str] | None = None) -> tuple[str, ...]:
    """`python,javascript` as a tuple; unknown names and ones the image lacks are refused."""
    names = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    if not names:
        raise LanguageError("no language given; choose from " + ", ".join(LANGUAGES))
    for name in names:
        if name not in RUNTIMES:
            raise LanguageError(f"unknown language {name!r}; choose from {', '.join(LANGUAGES)}")
        if available is not None and name not in available:
            raise LanguageError(
                f"the rollout image lacks {name}, so {name} attempts are refused "
                f"(it runs {', '.join(sorted(available))})"
            )
    return names
