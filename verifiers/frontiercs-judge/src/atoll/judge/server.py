"""The embedded judge's HTTP face: the authoritative judge's routes and JSON shapes.

`POST /submit` takes `pid`, `lang` and the code as a multipart file part or
field, a JSON body, a `codeBase64` field, or a plain-text body (then `pid` and
`lang` come from the query string), exactly as clients of the authority send
them. Blocking work (SQLite, judging) never runs on the event loop.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from atoll.judge import openapi
from atoll.judge.api import (
    LANG_ALIASES,
    MAX_SID,
    MAX_SOURCE_BYTES,
    BadSubmission,
    judge_version,
    submission_fields,
)
from atoll.judge.engine import UnknownProblem
from atoll.judge.result_wait import MAX_WAIT_S, RESULT_WAIT_HEADER, ResultWaits, parse_wait
from atoll.judge.service import JudgeService, QueueFull, ResultView

log = logging.getLogger(__name__)

CODE_FIELDS = ("code", "file", "source")
_SID = re.compile(r"[0-9]+", re.ASCII)


def normalise_lang(lang: str | None) -> str:
    value = (lang or "cpp").strip().lower()
    if value not in LANG_ALIASES:
        raise BadSubmission(
            f"unsupported lang {lang!r}; use one of {', '.join(sorted(LANG_ALIASES))}"
        )
    return "cpp"


def _decode_base64(value: str | bytes) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BadSubmission("codeBase64 is not valid base64") from None


def _read_json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except RecursionError:
        raise BadSubmission("request body is JSON nested too deeply") from None
    except UnicodeDecodeError:
        raise BadSubmission("request body is not UTF-8 JSON") from None
    except ValueError as exc:  # JSONDecodeError, or a number too long to read
        reason = str(exc).split(":")[0]
        raise BadSubmission(f"request body is not valid JSON ({reason})") from None
    if not isinstance(body, dict):
        raise BadSubmission("JSON body must be an object with pid, lang and code")
    return body


async def _form_fields(request: Request) -> tuple[dict[str, Any], bytes | None]:
    """Text fields and the code of a multipart or urlencoded form (code may be a file part)."""
    fields: dict[str, Any] = {}
    code: bytes | None = None
    form = await request.form(max_part_size=MAX_SOURCE_BYTES)
    for key, value in form.multi_items():
        if key in CODE_FIELDS:
            code = await value.read() if isinstance(value, UploadFile) else value.encode()
        elif key == "codeBase64":
            raw = await value.read() if isinstance(value, UploadFile) else value
            code = _decode_base64(raw)
        elif isinstance(value, UploadFile):
            if key in ("pid", "lang"):
                raise BadSubmission(f"invalid {key}: send it as a plain form field, not a file")
        else:
            fields[key] = value
    return fields, code


async def parse_submission(request: Request) -> tuple[str, str, bytes]:
    """(pid, lang, source) from any of the body forms the authority accepts."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fields: dict[str, Any] = dict(request.query_params)
    code: bytes | None = None
    if content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        form_fields, code = await _form_fields(request)
        fields.update(form_fields)
    elif content_type == "application/json":
        body = _read_json(await request.body())
        fields.update(body)
    else:
        raw = await request.body()
        if "codeBase64" not in fields and raw:
            code = raw
    checked = submission_fields(fields)
    if code is None and checked.code is not None:
        code = checked.code.encode("utf-8")
    if code is None and checked.codeBase64 is not None:
        code = _decode_base64(checked.codeBase64)
    if not code:
        raise BadSubmission(
            "no code: send it as a multipart part `code`, a JSON field `code`, "
            "a `codeBase64` field, or a text body"
        )
    if len(code) > MAX_SOURCE_BYTES:
        raise BadSubmission(f"code is larger than {MAX_SOURCE_BYTES} bytes")
    pid = str(checked.pid)
    return pid, normalise_lang(checked.lang), code


def submission_id(raw: str) -> int | None:
    """The id in `/result/{sid}`: decimal digits; None for one no submission can have.

    BadSubmission for anything but ASCII digits (`int()` would also take `+1`,
    ` 1` or other scripts' digits).
    """
    if not _SID.fullmatch(raw):
        raise BadSubmission(f"submission id {raw!r} is not a non-negative decimal integer")
    digits = raw.lstrip("0") or "0"
    if len(digits) > len(str(MAX_SID)) or int(digits) > MAX_SID:
        return None
    return int(digits)


def _error(message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _http_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = str(exc.detail).replace("\n", " ")
    return _error(detail, exc.status_code, dict(exc.headers or {}))


async def _client_gone(_: Request, __: Exception) -> Response:
    return Response(status_code=400)  # nobody is left to read it


async def _server_error(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _error(f"the judge failed on this request ({type(exc).__name__}); see its log", 500)


def create_app(service: JudgeService, *, embedded: bool = False) -> Starlette:
    """The judge's HTTP app; `embedded` when an atoll process serves it for itself (`/version`).

    Its `state.result_waits` are the polls of results it holds (see `result_wait`):
    a server that stops calls their `release()` first.
    """
    about = judge_version(embedded=embedded).model_dump()
    waits = ResultWaits()
    wait_header = {RESULT_WAIT_HEADER: f"{MAX_WAIT_S:g}"}

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        stop_listening = service.on_final(waits.final)
        try:
            yield
        finally:
            stop_listening()
            waits.release()
        service.stop()

    async def health(_: Request) -> Response:
        return JSONResponse({"ok": True, "workers": service.engine.workers})

    async def version(_: Request) -> Response:
        return JSONResponse(about)

    async def problems(_: Request) -> Response:
        listed = [p.summary() for p in service.engine.problems.values()]
        return JSONResponse({"problems": listed})

    async def statement(request: Request) -> Response:
        pid = request.path_params["pid"]
        try:
            problem = service.engine.problem(pid)
        except UnknownProblem as exc:
            return _error(str(exc), 404)
        return PlainTextResponse(await run_in_threadpool(problem.statement))

    async def submit(request: Request) -> Response:
        try:
            pid, lang, code = await parse_submission(request)
            sid = await run_in_threadpool(service.submit, pid, lang, code)
        except BadSubmission as exc:
            return _error(str(exc), 400)
        except UnknownProblem as exc:
            return _error(str(exc), 404)
        except QueueFull as exc:
            return _error(str(exc), 503, headers={"Retry-After": "5"})
        return JSONResponse({"sid": sid})

    async def result(request: Request) -> Response:
        raw = request.path_params["sid"]
        try:
            sid = submission_id(raw)
        except BadSubmission as exc:
            return _error(str(exc), 400)
        if sid is None:
            return _error(f"no submission {raw[:40]}", 404)
        try:
            wait = parse_wait(request.query_params.get("wait"))
        except ValueError as exc:
            return _error(str(exc), 400)
        if wait is None:
            view = await run_in_threadpool(service.result, sid)
        else:
            view = await held_result(sid, wait)
        return JSONResponse(view.body, status_code=view.http_status, headers=wait_header)

    async def held_result(sid: int, wait: float) -> ResultView:
        """The result, once final or after `wait` seconds, whichever is first."""
        async with waits.holding(sid) as until:
            view = await run_in_threadpool(service.result, sid)
            if view.final:
                return view
            await until(wait)
        return await run_in_threadpool(service.result, sid)

    async def description(_: Request) -> Response:
        return JSONResponse(openapi.document(sorted(service.engine.problems)))

    app = Starlette(
        routes=[
            Route(openapi.PATH, description, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/version", version, methods=["GET"]),
            Route("/problems", problems, methods=["GET"]),
            Route("/problem/{pid}/statement", statement, methods=["GET"]),
            Route("/submit", submit, methods=["POST"]),
            Route("/result/{sid}", result, methods=["GET"]),
        ],
        lifespan=lifespan,
        exception_handlers={
            HTTPException: _http_error,
            ClientDisconnect: _client_gone,
            Exception: _server_error,
        },
        max_body_size=4 * MAX_SOURCE_BYTES,
    )
    app.state.result_waits = waits
    return app
