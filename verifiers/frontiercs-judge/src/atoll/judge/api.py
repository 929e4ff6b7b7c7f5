"""What the judge's HTTP API accepts and answers, as types: one source for checks and docs.

The server validates every submission's fields with `SubmissionFields`, and
`atoll.judge.openapi` builds the published OpenAPI description from these same
models, so the description cannot drift from what the server really accepts.
A bad field becomes one line naming the field and what is wrong with it.
"""

from __future__ import annotations

from importlib import metadata
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    ValidationError,
)

from atoll.core.sizes import MiB
from atoll.judge.store import MAX_SID as MAX_SID  # re-exported: the pid field's bound

LANG_ALIASES = ("c++", "cpp", "cpp17", "cxx", "g++", "gnu++17")
MAX_SOURCE_BYTES = MiB
MAX_PID_CHARS = 64
MAX_LANG_CHARS = 32
# The distribution whose version `GET /version` reports: what decides how a program scores.
DISTRIBUTION = "atoll-frontiercs-judge"


class BadSubmission(ValueError):
    """A request the client must fix; answered with 400 and this message."""


def _text(value: str) -> str:
    """Only strings that are text: a lone UTF-16 surrogate (from a JSON `\\ud800`) is not."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("holds a lone surrogate (\\ud800-\\udfff), which is not text") from None
    return value


Text = Annotated[str, AfterValidator(_text)]
ProblemId = Annotated[
    Text,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_PID_CHARS),
    Field(description="The problem id, e.g. `0` (see GET /problems)."),
]


class SubmissionFields(BaseModel):
    """The fields of `POST /submit`, whichever body form carries them.

    Fields the authority's clients may add and the judge does not use are ignored.
    """

    model_config = ConfigDict(extra="ignore", strict=True, title="Submission")

    pid: ProblemId | Annotated[int, Strict(), Field(ge=0, le=MAX_SID)]
    lang: (
        Annotated[
            Text,
            StringConstraints(max_length=MAX_LANG_CHARS),
            Field(
                description="The language; any case of: " + ", ".join(LANG_ALIASES) + ".",
                examples=["cpp"],
            ),
        ]
        | None
    ) = None
    code: Annotated[Text, Field(description="The C++ source.")] | None = None
    codeBase64: Annotated[str, Field(description="The C++ source, base64-encoded.")] | None = None


def submission_fields(values: dict[str, Any]) -> SubmissionFields:
    """Validate the submission's fields; BadSubmission with one line naming the first bad one."""
    try:
        return SubmissionFields.model_validate(values)
    except ValidationError as exc:
        raise BadSubmission(_one_line(exc)) from None


def _one_line(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    first = errors[0]
    field = str(first["loc"][0]) if first["loc"] else "body"
    hints = {
        "pid": 'a string naming the problem (e.g. "0") or a non-negative integer',
        "lang": f"a string, one of {', '.join(LANG_ALIASES)}",
        "code": "a string holding the C++ source",
        "codeBase64": "a string holding the base64 of the C++ source",
    }
    if first["type"] == "missing":
        return f"missing {field} (the problem id, e.g. 0)" if field == "pid" else f"missing {field}"
    message = str(first["msg"]).replace("\n", " ")
    hint = hints.get(field)
    return f"invalid {field}: {message}" + (f"; it must be {hint}" if hint else "")


class Submitted(BaseModel):
    sid: int = Field(description="The submission's id; poll GET /result/{sid}.")


class Error(BaseModel):
    error: str = Field(description="One line saying what is wrong and what to do.")


class Health(BaseModel):
    ok: bool
    workers: int | None = Field(
        None,
        description="Processes the judge keeps busy at once (a dialogue counts two): this "
        "machine's, or on a Ray cluster its judge nodes' together. A client may size its "
        "load to it; absent from a judge that predates it.",
        examples=[8],
    )


class JudgeVersion(BaseModel):
    """What `GET /version` answers: which judge scores, so a client can record it.

    A search that resumes must score with the judge it started with; a judge
    embedded in an atoll process listens on a port that changes every start,
    so it says it is embedded rather than letting its address stand for it.
    """

    name: str = Field(description="The judge's distribution.", examples=[DISTRIBUTION])
    version: str = Field(description="Its version.", examples=["0.1.0"])
    embedded: bool = Field(
        description="Whether an atoll process started it for itself on a port of the moment "
        "(true), or it was started to serve on its own (`atoll judge serve`, false)."
    )


def package_version() -> str:
    """The installed judge's version; `unknown` when run from a tree that was never installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def judge_version(*, embedded: bool) -> JudgeVersion:
    """This judge's answer to `GET /version`."""
    return JudgeVersion(name=DISTRIBUTION, version=package_version(), embedded=embedded)


class ProblemSummary(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    title: str
    cases: int
    timeLimit: float
    memoryLimit: int


class Problems(BaseModel):
    problems: list[ProblemSummary]


class Queued(BaseModel):
    status: str = Field(pattern="^queued$")


class Judged(BaseModel):
    """A final result in the authority's shape (`done`, or `error` for a compile error)."""

    model_config = ConfigDict(extra="allow")

    status: str = Field(pattern="^(done|error)$")


class InfrastructureError(BaseModel):
    model_config = ConfigDict(extra="allow")

    status: str = Field(pattern="^infrastructure_error$")
    error: str
