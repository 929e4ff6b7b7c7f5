"""Run by the managed Python 3.11: the renderer's own prompt for every example's prefix.

Reads on stdin a JSON object with the corpus (`conversations`, `tools`,
`system_prompt`), `base_model` and `renderer`; prints one JSON line per
assistant message, in corpus order: the conversation id, the message index
and the renderer's `build_generation_prompt` tokens for the conversation up
to (not including) that message, and the tokens of that message as the
renderer writes it when it ends the conversation. It shares no code with
atoll's renderer script: it builds the cookbook messages itself.
"""

from __future__ import annotations

import json
import sys

from tinker_cookbook import renderers
from tinker_cookbook.tokenizer_utils import get_tokenizer


def cookbook_message(raw: dict) -> dict:
    message = {"role": raw["role"], "content": raw["content"]}
    calls = raw.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            renderers.ToolCall(
                id=c["id"],
                function=renderers.ToolCall.FunctionBody(
                    name=c["name"], arguments=json.dumps(c["arguments"])
                ),
            )
            for c in calls
        ]
    message.update({k: raw[k] for k in ("tool_call_id", "name") if k in raw})
    return message


def main() -> None:
    job = json.loads(sys.stdin.read())
    renderer = renderers.get_renderer(job["renderer"], get_tokenizer(job["base_model"]))
    head = renderer.create_conversation_prefix_with_tools(
        tools=job["tools"], system_prompt=job["system_prompt"]
    )
    for record in job["conversations"]:
        messages = [*head, *(cookbook_message(m) for m in record["messages"])]
        offset = len(head)
        for index, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            prompt = renderer.build_generation_prompt(messages[:index]).to_ints()
            print(
                json.dumps(
                    {"conversation": record["id"], "message": index - offset, "prompt": prompt}
                )
            )


if __name__ == "__main__":
    main()
