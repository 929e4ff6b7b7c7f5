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
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from atoll.judge.engine import UnknownProblem
from atoll.judge.service import JudgeService, QueueFull

LANG_ALIASES = frozenset({"cpp", "cpp17", "gnu++17", "c++", "cxx", "g++"})
MAX_SOURCE_BYTES = 1024 * 1024


class BadSubmission(ValueError):
    """A request the client must fix; answered with 400 and this message."""


def normalise_lang(lang: str | None) -> str:
    value = (lang or "cpp").strip().lower()
    if value not in LANG_ALIASES:
        raise BadSubmission(
            f"unsupported lang {lang!r}; use one of {', '.join(sorted(LANG_ALIASES))}"
        )
    return "cpp"


async def _code_value(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, UploadFile):
        return await value.read()
    return str(value).encode("utf-8")


def _decode_base64(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BadSubmission("codeBase64 is not valid base64") from None


async def parse_submission(request: Request) -> tuple[str, str, bytes]:
    """(pid, lang, source) from any of the body forms the authority accepts."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fields: dict[str, Any] = dict(request.query_params)
    code: bytes | None = None
    if content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        form = await request.form(max_part_size=MAX_SOURCE_BYTES)
        for key, value in form.multi_items():
            if key in ("code", "codeBase64", "file", "source"):
                if key == "codeBase64":
                    code = _decode_base64(str(value))
                else:
                    code = await _code_value(value)
            else:
                fields[key] = value
    elif content_type == "application/json":
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BadSubmission("request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise BadSubmission("JSON body must be an object with pid, lang and code")
        fields.update({k: v for k, v in body.items() if k not in ("code", "codeBase64")})
        if isinstance(body.get("code"), str):
            code = body["code"].encode("utf-8")
        elif isinstance(body.get("codeBase64"), str):
            code = _decode_base64(body["codeBase64"])
    else:
        raw = await request.body()
        if "codeBase64" in fields:
            code = _decode_base64(str(fields.pop("codeBase64")))
        elif raw:
            code = raw
    if "codeBase64" in fields and code is None:
        code = _decode_base64(str(fields["codeBase64"]))
    if not code:
        raise BadSubmission(
            "no code: send it as a multipart part `code`, a JSON field `code`, "
            "a `codeBase64` field, or a text body"
        )
    if len(code) > MAX_SOURCE_BYTES:
        raise BadSubmission(f"code is larger than {MAX_SOURCE_BYTES} bytes")
    pid = fields.get("pid")
    if pid is None or str(pid).strip() == "":
        raise BadSubmission("missing pid (the problem id, e.g. 0)")
    return str(pid).strip(), normalise_lang(fields.get("lang")), code


def create_app(service: JudgeService) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        service.stop()

    async def health(_: Request) -> Response:
        return JSONResponse({"ok": True})

    async def problems(_: Request) -> Response:
        listed = [p.summary() for p in service.engine.problems.values()]
        return JSONResponse({"problems": listed})

    async def statement(request: Request) -> Response:
        pid = request.path_params["pid"]
        try:
            problem = service.engine.problem(pid)
        except UnknownProblem as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return PlainTextResponse(await run_in_threadpool(problem.statement))

    async def submit(request: Request) -> Response:
        try:
            pid, lang, code = await parse_submission(request)
            sid = await run_in_threadpool(service.submit, pid, lang, code)
        except BadSubmission as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except UnknownProblem as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except QueueFull as exc:
            return JSONResponse({"error": str(exc)}, status_code=503, headers={"Retry-After": "5"})
        return JSONResponse({"sid": sid})

    async def result(request: Request) -> Response:
        raw = request.path_params["sid"]
        try:
            sid = int(raw)
        except ValueError:
            return JSONResponse({"error": f"submission id {raw!r} is not an integer"}, 400)
        view = await run_in_threadpool(service.result, sid)
        return JSONResponse(view.body, status_code=view.http_status)

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/problems", problems, methods=["GET"]),
            Route("/problem/{pid}/statement", statement, methods=["GET"]),
            Route("/submit", submit, methods=["POST"]),
            Route("/result/{sid}", result, methods=["GET"]),
        ],
        lifespan=lifespan,
        max_body_size=4 * MAX_SOURCE_BYTES,
    )
