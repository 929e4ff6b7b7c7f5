"""The OpenAPI description the judge serves at `GET /openapi.json`.

Clients and fuzzers read it to learn the routes, the body forms of
`/submit` and the answers. Request and answer schemas come from the models
in `atoll.judge.api`, which the server validates with, and the suite checks
that every route the server has is described (and nothing else), then
fuzzes the running server from this very document.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from atoll.judge.api import (
    LANG_ALIASES,
    MAX_PID_CHARS,
    MAX_SID,
    MAX_SOURCE_BYTES,
    Error,
    Health,
    InfrastructureError,
    Judged,
    JudgeVersion,
    Problems,
    Queued,
    SubmissionFields,
    Submitted,
)
from atoll.judge.result_wait import MAX_WAIT_S, RESULT_WAIT_HEADER

PATH = "/openapi.json"
VERSION = "1.0.0"
_MODELS = (
    SubmissionFields,
    Submitted,
    Error,
    Health,
    JudgeVersion,
    Problems,
    Queued,
    Judged,
    InfrastructureError,
)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


def _components() -> dict[str, Any]:
    _, schemas = models_json_schema(
        [(model, "validation") for model in _MODELS],
        ref_template="#/components/schemas/{model}",
    )
    return dict(schemas.get("$defs", {}))


def _form(pid: dict[str, Any], *, binary: bool) -> dict[str, Any]:
    code: dict[str, Any] = {"type": "string", "description": "The C++ source."}
    if binary:
        code["format"] = "binary"
    return {
        "type": "object",
        "required": ["pid"],
        "properties": {
            "pid": pid,
            "lang": {"type": "string", "maxLength": 32, "examples": ["cpp"]},
            "code": code,
            "codeBase64": {"type": "string", "description": "The C++ source, base64-encoded."},
        },
    }


def document(problem_ids: list[str]) -> dict[str, Any]:
    """The OpenAPI 3.1 description of this judge (its problem ids as examples)."""
    pid = _pid_schema(problem_ids)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "FrontierCS judge (atoll)",
            "version": VERSION,
            "description": (
                "The authoritative FrontierCS judge's protocol: submit a program, poll its "
                f"result. Languages: {', '.join(LANG_ALIASES)} (any case). Sources up to "
                f"{MAX_SOURCE_BYTES} bytes."
            ),
        },
        "paths": {
            **_reading_paths(pid),
            "/submit": {"post": _submit_operation(pid)},
            "/result/{sid}": {"get": _result_operation()},
        },
        "components": {"schemas": _components()},
    }


def _pid_schema(problem_ids: list[str]) -> dict[str, Any]:
    """A problem id, wherever one is given (path, query, form), with a few of ours as examples."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_PID_CHARS,
        "description": "The problem id (see GET /problems).",
        "examples": problem_ids[:5] or ["0"],
    }


def _reading_paths(pid: dict[str, Any]) -> dict[str, Any]:
    """The routes that only read: this description, health, version, problems and a statement."""
    return {
        PATH: {
            "get": {
                "operationId": "openapi",
                "summary": "This description.",
                "responses": {"200": _json({"type": "object"}, "The OpenAPI document.")},
            }
        },
        "/health": {
            "get": {
                "operationId": "health",
                "summary": "Whether the judge answers.",
                "responses": {"200": _json(_ref("Health"), "The judge is up.")},
            }
        },
        "/version": {
            "get": {
                "operationId": "version",
                "summary": "Which judge this is: its version, and whether it is embedded.",
                "responses": {"200": _json(_ref("JudgeVersion"), "The judge's version.")},
            }
        },
        "/problems": {
            "get": {
                "operationId": "problems",
                "summary": "The problems this judge scores.",
                "responses": {"200": _json(_ref("Problems"), "Every problem.")},
            }
        },
        "/problem/{pid}/statement": {
            "get": {
                "operationId": "statement",
                "summary": "A problem's statement, as plain text.",
                "parameters": [{"name": "pid", "in": "path", "required": True, "schema": pid}],
                "responses": {
                    "200": {
                        "description": "The statement.",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    "404": _error("No such problem."),
                },
            }
        },
    }


def _submit_query(pid: dict[str, Any]) -> list[dict[str, Any]]:
    """The query parameters `/submit` reads beside a text body."""
    return [
        {
            "name": name,
            "in": "query",
            "required": False,
            "schema": schema,
            "description": f"With a text body: {what}.",
        }
        for name, schema, what in (
            ("pid", pid, "the problem id"),
            ("lang", {"type": "string", "maxLength": 32}, "the language"),
            ("codeBase64", {"type": "string"}, "the source, base64-encoded, instead of the body"),
        )
    ]


def _submit_operation(pid: dict[str, Any]) -> dict[str, Any]:
    """`POST /submit`: its four body forms and its answers."""
    return {
        "operationId": "submit",
        "summary": "Queue a program for judging; answers its submission id.",
        "parameters": _submit_query(pid),
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": _ref("SubmissionFields")},
                "multipart/form-data": {"schema": _form(pid, binary=True)},
                "application/x-www-form-urlencoded": {"schema": _form(pid, binary=False)},
                "text/plain": {"schema": {"type": "string", "description": "The C++ source."}},
            },
        },
        "responses": {
            "200": _json(_ref("Submitted"), "Accepted and stored."),
            "400": _error("A field is missing or malformed."),
            "404": _error("No such problem."),
            "413": _error(f"The body is larger than {4 * MAX_SOURCE_BYTES} bytes."),
            "503": {
                **_error("The queue is full; retry after Retry-After seconds."),
                "headers": {"Retry-After": {"schema": {"type": "string"}}},
            },
        },
    }


def _result_operation() -> dict[str, Any]:
    """`GET /result/{sid}`: queued, judged, or the judge's own failure (see `result_wait`)."""
    hold = {
        RESULT_WAIT_HEADER: {
            "description": "The longest this judge holds a poll asked to `wait`, in seconds.",
            "schema": {"type": "string"},
        }
    }
    return {
        "operationId": "result",
        "summary": "A submission's result: queued, or final (readable again and again).",
        "parameters": [
            {
                "name": "sid",
                "in": "path",
                "required": True,
                "schema": {"type": "integer", "minimum": 0, "maximum": MAX_SID},
            },
            {
                "name": "wait",
                "in": "query",
                "required": False,
                "description": (
                    "An answer still queued is held until the result is final, for up to "
                    f"this many seconds (at most {MAX_WAIT_S:g}). Without it, the answer is "
                    "immediate, as the authority's."
                ),
                "schema": {"type": "number", "minimum": 0},
            },
        ],
        "responses": {
            "200": {
                **_json(
                    {"oneOf": [_ref("Queued"), _ref("Judged")]},
                    "Queued, or the final result in the authority's shape.",
                ),
                "headers": hold,
            },
            "400": _error(
                "The id is not a non-negative decimal integer, or `wait` not a number >= 0."
            ),
            "404": _error("No such submission."),
            "500": {
                **_json(
                    _ref("InfrastructureError"),
                    "The judge could not judge it; never a score.",
                ),
                "headers": hold,
            },
        },
    }
