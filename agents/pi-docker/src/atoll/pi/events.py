"""Reading Pi's JSON-mode event stream: tool calls, messages, usage and the stop reason.

Pi's JSON mode prints one event per line and exits 0 even when the model
call failed, so whether a run ended well is read from the events: the stop
reason of the last assistant message (`stop`, `length`, `toolUse`, `error`,
`aborted`) and its error message.

`message_update` events come one per streamed delta and each carries the
whole partial message twice (`message` and `assistantMessageEvent.partial`),
so the stream grows with the square of an answer's length: a 16k-token answer
streamed token by token is hundreds of megabytes. `compact_update` drops those
two snapshots and keeps the rest of the event (its kind, content index and
delta, or the finished block) verbatim; the whole message is in the
`message_end` that follows. They are not parsed here for the same reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_UPDATE_PREFIX = b'{"type":"message_update"'
# The many per-delta updates, as Pi writes them: parsed by their head only.
_DELTA_HEAD = re.compile(
    rb'^\{"type":"message_update","assistantMessageEvent":\{"type":"([a-z]+_delta)",'
    rb'"contentIndex":(\d+),"delta":'
)
_DECODER = json.JSONDecoder()


def is_update(line: bytes) -> bool:
    return line.startswith(_UPDATE_PREFIX)


def compact_update(line: bytes) -> bytes:
    """A `message_update` line without its two partial-message snapshots (newline kept off)."""
    head = _DELTA_HEAD.match(line)
    try:
        if head is not None:
            text = line.decode("utf-8")
            delta, _ = _DECODER.raw_decode(text, head.end())  # the head is ASCII: same offset
            inner = {"type": head.group(1).decode(), "contentIndex": int(head.group(2))}
            event: dict[str, Any] = {"type": "message_update", "assistantMessageEvent": inner}
            inner["delta"] = delta
        else:
            event = json.loads(line)
            event.pop("message", None)
            if isinstance(event.get("assistantMessageEvent"), dict):
                event["assistantMessageEvent"].pop("partial", None)
    except ValueError:
        return line.rstrip(b"\n")  # not what Pi writes: kept as it came
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class ToolCall:
    """One tool call as Pi saw it: arguments from the model, the result Pi gave back."""

    id: str
    name: str
    arguments: dict[str, Any]
    turn: int
    result_text: str | None = None
    is_error: bool | None = None
    started: bool = False
    finished: bool = False
    started_at: float | None = None  # when the host read Pi's tool_execution_start (epoch s)
    ended_at: float | None = None  # ... and its tool_execution_end
    start_order: int | None = None  # 1 for the first call Pi started, 2 for the next, ...

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "turn": self.turn,
            "result": self.result_text,
            "is_error": self.is_error,
            "executed": self.started,
            "finished": self.finished,
            "started_at": self.started_at,
            "start_order": self.start_order,
            "duration_s": (
                None
                if self.started_at is None or self.ended_at is None
                else round(self.ended_at - self.started_at, 4)
            ),
        }


@dataclass
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0

    def add(self, usage: dict[str, Any]) -> None:
        self.input += int(usage.get("input") or 0)
        self.output += int(usage.get("output") or 0)
        self.cache_read += int(usage.get("cacheRead") or 0)
        self.cache_write += int(usage.get("cacheWrite") or 0)
        self.total_tokens += int(usage.get("totalTokens") or 0)
        self.cost_usd += float((usage.get("cost") or {}).get("total") or 0.0)
        self.llm_calls += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "total_tokens": self.total_tokens,
            "cost_usd": round(self.cost_usd, 10),
            "llm_calls": self.llm_calls,
        }


@dataclass
class EventLog:
    """What the stream said, built one line at a time."""

    session: dict[str, Any] | None = None
    turns: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)  # every message_end, in order
    tool_calls: dict[str, ToolCall] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    agent_ended: bool = False
    events: int = 0
    event_bytes: int = 0  # every line fed, as Pi wrote them
    unparsed_lines: int = 0
    auto_retries: int = 0
    started_calls: int = 0

    def feed(self, line: bytes, at: float | None = None) -> dict[str, Any] | None:
        """Take one line of Pi's stdout (read at time `at`); the parsed event, or None if skipped."""
        self.event_bytes += len(line)
        if not line.strip():
            return None
        self.events += 1
        if is_update(line):
            return None
        try:
            event = json.loads(line)
        except ValueError:
            self.unparsed_lines += 1
            return None
        if not isinstance(event, dict):
            self.unparsed_lines += 1
            return None
        self._observe(event, at)
        return event

    def _observe(self, event: dict[str, Any], at: float | None) -> None:
        kind = event.get("type")
        if kind == "session":
            self.session = event
        elif kind == "turn_start":
            self.turns += 1
        elif kind == "message_end":
            message = event.get("message") or {}
            self.messages.append(message)
            if message.get("role") == "assistant":
                self.usage.add(message.get("usage") or {})
                for block in message.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "toolCall":
                        call_id = str(block.get("id", ""))
                        self.tool_calls.setdefault(
                            call_id,
                            ToolCall(
                                call_id,
                                str(block.get("name", "")),
                                dict(block.get("arguments") or {}),
                                self.turns,
                            ),
                        )
        elif kind == "tool_execution_start":
            call = self._call(event)
            call.started, call.started_at = True, at
            if call.start_order is None:
                self.started_calls += 1
                call.start_order = self.started_calls
        elif kind == "tool_execution_end":
            call = self._call(event)
            call.finished, call.ended_at = True, at
            call.is_error = bool(event.get("isError"))
            call.result_text = content_text((event.get("result") or {}).get("content"))
        elif kind == "agent_end":
            self.agent_ended = True
        elif kind == "auto_retry_start":
            self.auto_retries += 1

    def _call(self, event: dict[str, Any]) -> ToolCall:
        call_id = str(event.get("toolCallId", ""))
        if call_id not in self.tool_calls:
            self.tool_calls[call_id] = ToolCall(
                call_id, str(event.get("toolName", "")), dict(event.get("args") or {}), self.turns
            )
        return self.tool_calls[call_id]

    # -- conclusions --------------------------------------------------------

    def last_assistant(self) -> dict[str, Any] | None:
        # A slice, not reversed(): mypy types reversed() of this list's items as Any.
        for message in self.messages[::-1]:
            if message.get("role") == "assistant":
                return message
        return None

    @property
    def stop_reason(self) -> str | None:
        last = self.last_assistant()
        return None if last is None else last.get("stopReason")

    @property
    def error_message(self) -> str | None:
        last = self.last_assistant()
        return None if last is None else last.get("errorMessage")

    def final_text(self) -> str:
        """The text of the last assistant message (the model's final answer)."""
        last = self.last_assistant()
        return "" if last is None else content_text(last.get("content"), kinds=("text",))


def content_text(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text blocks of a Pi message or tool result content, joined."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") in kinds:
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)
