"""Pi's event stream: per-delta updates kept without their snapshots, and what the stream says."""

from __future__ import annotations

import json

from atoll.pi.events import EventLog, compact_update


def _update(inner: dict, partial: dict) -> bytes:
    """A message_update line as Pi writes it: the event, its partial, the message snapshot."""
    event = {"type": "message_update", "assistantMessageEvent": {**inner, "partial": partial}}
    event["message"] = partial
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


PARTIAL = {"role": "assistant", "content": [{"type": "text", "text": "x" * 5000}]}


def test_a_delta_update_keeps_its_delta_and_drops_the_snapshots():
    delta = 'say "partial": {é} \\ done,"partial":'
    line = _update({"type": "text_delta", "contentIndex": 2, "delta": delta}, PARTIAL)
    compact = compact_update(line)
    assert json.loads(compact) == {
        "type": "message_update",
        "assistantMessageEvent": {"type": "text_delta", "contentIndex": 2, "delta": delta},
    }
    assert len(compact) < 200 < len(line)


def test_other_updates_keep_everything_but_the_snapshots():
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"partial": True}}
    line = _update({"type": "toolcall_end", "contentIndex": 0, "toolCall": call}, PARTIAL)
    assert json.loads(compact_update(line)) == {
        "type": "message_update",
        "assistantMessageEvent": {"type": "toolcall_end", "contentIndex": 0, "toolCall": call},
    }
    assert compact_update(b'{"type":"message_update", not json') == (
        b'{"type":"message_update", not json'
    )


def test_the_log_pairs_tool_calls_with_results_and_reads_the_stop_reason():
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "running"},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}},
        ],
        "usage": {"input": 10, "output": 4, "cacheRead": 2, "cost": {"total": 0.5}},
        "stopReason": "toolUse",
    }
    final = {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
        "usage": {"input": 20, "output": 1},
        "stopReason": "stop",
    }
    lines = [
        {"type": "turn_start"},
        {"type": "message_end", "message": assistant},
        {"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": {}},
        {
            "type": "tool_execution_end",
            "toolCallId": "c1",
            "toolName": "bash",
            "result": {"content": [{"type": "text", "text": "a.py"}]},
            "isError": False,
        },
        {"type": "turn_start"},
        {"type": "message_end", "message": final},
        {"type": "agent_end", "messages": []},
    ]
    log = EventLog()
    for at, event in enumerate(lines):
        log.feed(json.dumps(event).encode() + b"\n", float(at))
    log.feed(_update({"type": "text_delta", "contentIndex": 0, "delta": "d"}, PARTIAL))
    (call,) = log.tool_calls.values()
    assert call.to_json() | {"started_at": None} == {
        "id": "c1",
        "name": "bash",
        "arguments": {"command": "ls"},
        "turn": 1,
        "result": "a.py",
        "is_error": False,
        "executed": True,
        "finished": True,
        "started_at": None,
        "start_order": 1,
        "duration_s": 1.0,
    }
    assert (log.turns, log.stop_reason, log.final_text(), log.agent_ended) == (
        2,
        "stop",
        "done",
        True,
    )
    assert log.usage.to_json()["input_tokens"] == 30 and log.usage.cost_usd == 0.5
    assert log.events == 8
