"""A tiny model that already answers guidance prompts with a guidance block, for tests and benchmarks.

Run by the managed Python 3.11 interpreter (torch, transformers and
tinker-cookbook are there). A random tiny model never writes a well-formed
`<guidance>` block, and its rank-8 LoRA moves too little to learn the format
in a few supervised steps, so every rollout of a training run would earn
reward 0 and no group would have anything to teach. This script fine-tunes
all of the tiny model's weights (about 140k parameters, seconds on CPU) on
guidance prompts answered with `<guidance>WORD</guidance>` for each of a few
words, equally, and saves the result as a new base model directory: a policy
that writes well-formed guidance, choosing among the words at random, which
is what test-time training then has to sharpen.

Reads a JSON job on stdin: base_model, out, renderer, prompts (lists of
messages), answers (strings), steps, learning_rate, seed. Prints
{"out": ..., "loss": ...} on stdout.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from tinker_cookbook import renderers
from tinker_cookbook.renderers import TrainOnWhat
from tinker_cookbook.tokenizer_utils import get_tokenizer
from transformers import AutoModelForCausalLM


def main() -> None:
    job = json.loads(sys.stdin.read())
    torch.manual_seed(int(job["seed"]))
    tokenizer = get_tokenizer(job["base_model"])
    renderer = renderers.get_renderer(job["renderer"], tokenizer)
    model = AutoModelForCausalLM.from_pretrained(job["base_model"], dtype=torch.float32)
    examples = []
    for messages in job["prompts"]:
        for answer in job["answers"]:
            model_input, weights = renderer.build_supervised_example(
                [*messages, {"role": "assistant", "content": answer}],
                train_on_what=TrainOnWhat.LAST_ASSISTANT_MESSAGE,
            )
            examples.append((torch.tensor(model_input.to_ints()), torch.tensor(weights.tolist())))
    optimizer = torch.optim.Adam(model.parameters(), lr=float(job["learning_rate"]))
    loss_value = float("nan")
    for _ in range(int(job["steps"])):
        optimizer.zero_grad()
        total = 0.0
        for ids, weights in examples:
            # Logits only where a weighted token is predicted: the answer ends the example,
            # and a long prompt's other logits would cost more than the model itself.
            first = int(weights.nonzero()[0])
            kept = model(ids[None], logits_to_keep=len(ids) - first + 1).logits[0, :-1]
            logprobs = torch.log_softmax(kept, -1).gather(1, ids[first:, None])[:, 0]
            loss = -(logprobs * weights[first:]).sum() / weights.sum() / len(examples)
            loss.backward()
            total += float(loss)
        optimizer.step()
        loss_value = total
    out = Path(job["out"])
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    print(json.dumps({"out": str(out), "loss": loss_value}))


if __name__ == "__main__":
    main()
