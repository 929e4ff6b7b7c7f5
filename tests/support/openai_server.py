"""A scripted OpenAI-compatible chat-completions server on loopback.

Tests replace only LLM providers, and they replace them with a real HTTP
server so that the code under test goes through its real HTTP client, retries
and timeouts. The test scripts the answers with a function of the request
body; every request is recorded so a test can assert what was sent.

A request with `"stream": true` is answered as the provider streams: server-sent
`chat.completion.chunk` events over chunked transfer encoding, the content in
several deltas, each tool call as an id-and-name delta followed by argument
fragments, the finish reason, a usage chunk when `stream_options.include_usage`
asks for one, and `data: [DONE]`.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """A function call the scripted model makes; `arguments` is sent as JSON text."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = ""  # "call_<request>_<index>" when empty

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a completion (text and/or tool calls), or an HTTP error status."""

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    reasoning: str | None = None
    finish_reason: str = "stop"  # "tool_calls" when the reply has tool calls and says "stop"
    completion_tokens: int = 8
    prompt_tokens: int = 16
    tool_calls: tuple[ToolCall, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    error_message: str = "scripted error"
    # HTTP 200 whose body is an error object, as some providers (OpenRouter) answer.
    error_in_body: bool = False
    drop: bool = False  # close the connection without answering (a lost response)

    def finish(self) -> str:
        if self.tool_calls and self.finish_reason == "stop":
            return "tool_calls"
        return self.finish_reason

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass(frozen=True)
class RecordedRequest:
    """What one client sent: path, headers (lower-case names) and the parsed JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float


Script = Callable[[dict[str, Any]], "Reply | str"]


def stage_of(request: dict[str, Any]) -> str | None:
    """The stage a request names: its `response_format.json_schema.name`, if any."""
    response_format = request.get("response_format")
    if not isinstance(response_format, dict):
        return None
    schema = response_format.get("json_schema")
    return schema.get("name") if isinstance(schema, dict) else None


class NumberedScript:
    """A script whose answer may depend on the request's number: 1, 2, ... in order of arrival.

    Requests arrive on threads of their own, so the count is kept under a
    lock; `calls` is how many came. `arrived(number)` runs under that lock
    as request `number` comes in, so what it does (kill a judge, say) has
    happened before that request or any later one is answered. Subclass and
    override `answer` (and `arrived`), or wrap a function with `numbered`.
    """

    def __init__(self) -> None:
        self.calls = 0
        self._count_lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply | str:
        with self._count_lock:
            self.calls += 1
            number = self.calls
            self.arrived(number)
        return self.answer(request, number)

    def arrived(self, number: int) -> None:
        """What happens as request `number` arrives; nothing by default."""

    def answer(self, request: dict[str, Any], number: int) -> Reply | str:
        raise NotImplementedError


class _Numbered(NumberedScript):
    def __init__(
        self,
        answer: Callable[[dict[str, Any], int], Reply | str],
        at: dict[int, Callable[[], object]],
    ) -> None:
        super().__init__()
        self._answer = answer
        self._at = at

    def arrived(self, number: int) -> None:
        action = self._at.get(number)
        if action is not None:
            action()

    def answer(self, request: dict[str, Any], number: int) -> Reply | str:
        return self._answer(request, number)


def numbered(answer: Callable[[dict[str, Any], int], Reply | str]) -> NumberedScript:
    """A script answering `answer(request, number)`."""
    return _Numbered(answer, {})


def replies_first(replies: list[Reply], then: Script) -> NumberedScript:
    """Answers request n with `replies[n - 1]` while there are any, every later one with `then`."""
    return numbered(lambda r, n: replies[n - 1] if n <= len(replies) else then(r))


def acting_at(number: int, action: Callable[[], object], script: Script) -> NumberedScript:
    """`script`, with `action` done as request `number` arrives (before any later answer)."""
    return _Numbered(lambda request, _number: script(request), {number: action})


class StageScript:
    """A script that answers by STAGE (the json_schema name of the request's response_format).

    `answers` maps a stage to a Reply, a string, a dict (sent as its JSON) or a
    function of the request body returning one of those. Each call is counted
    per stage (`calls`), under a lock, so scripts may depend on the count.
    """

    def __init__(self, answers: dict[str, Any], *, default: Reply | None = None) -> None:
        self.answers = dict(answers)
        self.default = default or Reply(status=400, error_message="no answer scripted")
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply | str:
        stage = stage_of(request) or ""
        with self._lock:
            self.calls[stage] = self.calls.get(stage, 0) + 1
        answer = self.answers.get(stage, self.default)
        if callable(answer) and not isinstance(answer, Reply):
            answer = answer(request)
        if isinstance(answer, dict):
            return Reply(content=json.dumps(answer))
        return answer


def echo_script(request: dict[str, Any]) -> Reply:
    """The default: answer with the last user message, reversed, so tests see a real round trip."""
    messages = request.get("messages") or [{}]
    return Reply(content=str(messages[-1].get("content", ""))[::-1])


class ScriptedOpenAIServer:
    """A threaded HTTP server answering `/v1/chat/completions` and `/v1/models` from a script.

    Use as a context manager; `base_url` ends in `/v1` as OpenAI clients expect.
    `script` may be replaced at any time; it is called once per request, from
    the request's own thread, so it must be thread-safe if it keeps state.
    """

    def __init__(self, script: Script = echo_script, *, model: str = "scripted-model") -> None:
        self.script: Script = script
        self.model = model
        self.models_status = 200  # what GET /v1/models answers (401 to refuse the key)
        # Extra fields of the model's /v1/models entry (`atoll tinker serve` adds model_path).
        self.model_fields: dict[str, Any] = {}
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> ScriptedOpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> int:
        with self._lock:
            self.requests.append(RecordedRequest(path, headers, body, time.time()))
            self._counter += 1
            return self._counter

    def _completion(self, request: dict[str, Any], reply: Reply, number: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": _call_id(call, number, index),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for index, call in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish()}],
            "usage": reply.usage(),
        }

    def _chunks(self, request: dict[str, Any], reply: Reply, number: int) -> list[dict[str, Any]]:
        """The streamed form of one reply, as the `chat.completion.chunk` objects a provider sends."""
        base = {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        if reply.reasoning:
            chunks += [chunk({"reasoning_content": part}) for part in _pieces(reply.reasoning)]
        chunks += [chunk({"content": part}) for part in _pieces(reply.content)]
        for index, call in enumerate(reply.tool_calls):
            head = {
                "index": index,
                "id": _call_id(call, number, index),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            chunks.append(chunk({"tool_calls": [head]}))
            for part in _pieces(call.arguments_json()):
                fragment = {"index": index, "function": {"arguments": part}}
                chunks.append(chunk({"tool_calls": [fragment]}))
        chunks.append(chunk({}, reply.finish()))
        if (request.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": reply.usage()})
        return chunks

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def _send(self, status: int, payload: dict[str, Any], extra: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client hung up (a killed test process)

            def _stream(self, chunks: list[dict[str, Any]], extra: dict[str, str]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
                for data in [*events, b"data: [DONE]\n\n"]:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def do_GET(self) -> None:  # noqa: N802
                server._record(self.path, {k.lower(): v for k, v in self.headers.items()}, {})
                if self.path.rstrip("/").endswith("/models") and server.models_status != 200:
                    self._send(server.models_status, {"error": {"message": "refused"}}, {})
                elif self.path.rstrip("/").endswith("/models"):
                    entry = {"id": server.model, "object": "model", **server.model_fields}
                    body = {"object": "list", "data": [entry]}
                    self._send(200, body, {})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON"}}, {})
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                number = server._record(self.path, headers, body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                    return
                answer = server.script(body)
                reply = Reply(content=answer) if isinstance(answer, str) else answer
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.status >= 400 or reply.error_in_body:
                    error = {"error": {"message": reply.error_message, "code": reply.status}}
                    self._send(reply.status, error, reply.headers)
                    return
                if body.get("stream"):
                    self._stream(server._chunks(body, reply, number), reply.headers)
                    return
                self._send(reply.status, server._completion(body, reply, number), reply.headers)

        return Handler


def _call_id(call: ToolCall, number: int, index: int) -> str:
    return call.id or f"call_{number}_{index}"


def _pieces(text: str, parts: int = 3) -> list[str]:
    """`text` cut into a few deltas, as a provider streams it ([] for no text)."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]
