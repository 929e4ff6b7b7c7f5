"""The tool-protocol bootstrap's renderer and supervised trainer, run by the managed Python 3.11.

Reads its job (JSON) on stdin: `mode` (`render` or `train`), the corpus's
conversations, system prompt and tool schemas, the base model and renderer.

Every assistant message of a conversation is its own example: the full
conversation prefix up to and including that message, rendered by the
cookbook renderer with `TrainOnWhat.LAST_ASSISTANT_MESSAGE`, so the tokens
before the target are exactly what the renderer would give as the prompt for
that turn (never `ALL_ASSISTANT_MESSAGES`, which for a renderer that strips
history, like Qwen3's, trains earlier turns on a context they never see).

`render` writes the examples (tokens and weights) as JSONL to `out`; `train`
runs the cookbook's supervised loop (`tinker_cookbook.supervised.train.main`)
over them with the run directory as its log path, so `metrics.jsonl`,
`checkpoints.jsonl` and resuming are the cookbook's. The Tinker key comes from
`TINKER_API_KEY` in the environment, never from the job.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from typing import Any

import chz
import tinker
from tinker_cookbook import renderers
from tinker_cookbook.renderers import TrainOnWhat
from tinker_cookbook.supervised import train
from tinker_cookbook.supervised.common import datum_from_model_input_weights
from tinker_cookbook.supervised.types import SupervisedDataset, SupervisedDatasetBuilder
from tinker_cookbook.tokenizer_utils import get_tokenizer

EXAMPLES_FILE = "examples.json"


def to_message(raw: dict[str, Any]) -> Any:
    """A corpus message as the cookbook's `Message` (tool calls as `ToolCall` objects)."""
    message: dict[str, Any] = {"role": raw["role"], "content": raw["content"]}
    if raw.get("tool_calls"):
        message["tool_calls"] = [
            renderers.ToolCall(
                id=call["id"],
                function=renderers.ToolCall.FunctionBody(
                    name=call["name"], arguments=json.dumps(call["arguments"])
                ),
            )
            for call in raw["tool_calls"]
        ]
    for key in ("tool_call_id", "name"):
        if key in raw:
            message[key] = raw[key]
    return message


def prefixes(job: dict[str, Any], renderer: Any) -> list[tuple[str, int, list[Any]]]:
    """(conversation id, message index, messages through that assistant message), in order."""
    head = renderer.create_conversation_prefix_with_tools(
        tools=job["tools"], system_prompt=job["system_prompt"]
    )
    found = []
    for record in job["conversations"]:
        messages = [to_message(m) for m in record["messages"]]
        for index, message in enumerate(messages):
            if message["role"] == "assistant":
                found.append((record["id"], index, [*head, *messages[: index + 1]]))
    return found


def render(job: dict[str, Any], renderer: Any) -> list[tuple[str, int, Any, Any]]:
    """Every example: (conversation id, message index, model input, weights)."""
    examples = []
    for conversation, index, messages in prefixes(job, renderer):
        model_input, weights = renderer.build_supervised_example(
            messages, train_on_what=TrainOnWhat.LAST_ASSISTANT_MESSAGE
        )
        examples.append((conversation, index, model_input, weights))
    return examples


def make_renderer(job: dict[str, Any]) -> Any:
    return renderers.get_renderer(job["renderer"], get_tokenizer(job["base_model"]))


class ExampleDataset(SupervisedDataset):
    """Step i: `batch_size` examples from one seeded order of all of them, wrapping around.

    Each step is one cookbook "epoch" of one batch: the loop's final checkpoint
    records the epochs done, so a rerun with a larger `--steps` continues after
    them (with one epoch of `steps` batches the final record would end the run
    for good). The loop tells the dataset its epoch through `set_epoch`.
    """

    def __init__(self, datums: list[tinker.Datum], batch_size: int, seed: int):
        self.datums, self.batch_size, self.step = datums, batch_size, 0
        self.order = list(range(len(datums)))
        random.Random(seed).shuffle(self.order)

    def get_batch(self, index: int) -> list[tinker.Datum]:
        start = self.step * self.batch_size
        return [
            self.datums[self.order[(start + j) % len(self.order)]] for j in range(self.batch_size)
        ]

    def set_epoch(self, seed: int = 0) -> None:
        self.step = seed  # the cookbook passes the epoch index

    def __len__(self) -> int:
        return 1


@chz.chz
class ExampleDatasetBuilder(SupervisedDatasetBuilder):
    job_json: str  # chz fields are plain values; the job travels as its JSON text

    def __call__(self) -> tuple[SupervisedDataset, SupervisedDataset | None]:
        job = json.loads(self.job_json)
        max_length = int(job["max_length"])
        examples = render(job, make_renderer(job))
        # Truncating from the right would cut off the very target an example exists for.
        datums = [
            datum_from_model_input_weights(model_input, weights, max_length, reduction="mean")
            for _, _, model_input, weights in examples
            if model_input.length <= max_length
        ]
        counts = {
            "rendered": len(examples),
            "trained": len(datums),
            "over_max_length": len(examples) - len(datums),
            "max_length": max_length,
        }
        path = os.path.join(job["run_dir"], EXAMPLES_FILE)
        with open(path + ".tmp", "w", encoding="utf-8") as sink:
            json.dump(counts, sink)
        os.replace(path + ".tmp", path)
        if not datums:
            raise SystemExit(
                f"every example is longer than --max-length {max_length} tokens; raise it"
            )
        return (
            ExampleDataset(datums, int(job["batch_size"]), int(job["seed"])),
            None,
        )


def main() -> None:
    job = json.loads(sys.stdin.read())
    if job["mode"] == "render":
        with open(job["out"], "w", encoding="utf-8") as sink:
            for conversation, index, model_input, weights in render(job, make_renderer(job)):
                row = {
                    "conversation": conversation,
                    "message": index,
                    "tokens": model_input.to_ints(),
                    "weights": [float(w) for w in weights.tolist()],
                }
                sink.write(json.dumps(row) + "\n")
        return
    # Evaluation-free and unpipelined: each step is submitted, finished and saved before
    # the next is submitted, so a saved state is exactly the steps logged before it.
    config = train.Config(
        log_path=job["run_dir"],
        model_name=job["base_model"],
        recipe_name="atoll-pi-bootstrap",
        renderer_name=job["renderer"],
        dataset_builder=ExampleDatasetBuilder(job_json=json.dumps(job)),
        learning_rate=float(job["learning_rate"]),
        lr_schedule="constant",
        num_epochs=int(job["steps"]),
        lora_rank=int(job["lora_rank"]),
        base_url=job["base_url"],
        # As in train.py: a resume loads the run's own last state, not this one.
        load_checkpoint_path=job.get("load_checkpoint"),
        save_every=1,
        eval_every=0,
        infrequent_eval_every=0,
        submit_ahead=0,
    )
    asyncio.run(train.main(config))


if __name__ == "__main__":
    main()
