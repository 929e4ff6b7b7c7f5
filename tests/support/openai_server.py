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
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
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
                self.end_headers()
                self.wfile.write(data)

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
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": server.model, "object": "model"}]}
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
                if reply.status >= 400:
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
