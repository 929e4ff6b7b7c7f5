"""A supervised warm start of a tiny model on Tinker, run by the managed Python 3.11 interpreter.

A random tiny model never writes a well-formed `<guidance>` block, so every
rollout of a training test would earn reward 0 and no group would teach the
policy anything. Tests warm it first, as a user warms a real model before
test-time training: a few supervised steps on well-formed answers, saved as a
training state that `tinker_load_checkpoint` starts the run's LoRA from.

Reads a JSON job on stdin (base_url, base_model, renderer, lora_rank,
learning_rate, steps, name, examples: [{messages, answer}]) and prints
{"state_path": ...} on stdout.
"""

from __future__ import annotations

import json
import os
import sys

import tinker
from tinker_cookbook import renderers
from tinker_cookbook.renderers import TrainOnWhat
from tinker_cookbook.supervised.common import datum_from_model_input_weights
from tinker_cookbook.tokenizer_utils import get_tokenizer


def main() -> None:
    job = json.loads(sys.stdin.read())
    renderer = renderers.get_renderer(job["renderer"], get_tokenizer(job["base_model"]))
    datums = []
    for example in job["examples"]:
        messages = [*example["messages"], {"role": "assistant", "content": example["answer"]}]
        model_input, weights = renderer.build_supervised_example(
            messages, train_on_what=TrainOnWhat.LAST_ASSISTANT_MESSAGE
        )
        datums.append(datum_from_model_input_weights(model_input, weights, 1 << 16))
    service = tinker.ServiceClient(base_url=job["base_url"])
    trainer = service.create_lora_training_client(
        base_model=job["base_model"], rank=int(job["lora_rank"])
    )
    adam = tinker.AdamParams(learning_rate=float(job["learning_rate"]))
    for _ in range(int(job["steps"])):
        trainer.forward_backward(datums, loss_fn="cross_entropy").result()
        trainer.optim_step(adam).result()
    path = trainer.save_state(job["name"]).result().path
    print(json.dumps({"state_path": path}))


if __name__ == "__main__":
    main()
    # The answer is printed and every Tinker future resolved. Leave without finalizing the
    # interpreter: the Tinker client's event loop runs on in a daemon thread, and a CI run
    # saw this script abort there (SIGABRT, nothing printed) after its state was saved.
    sys.stdout.flush()
    os._exit(0)
