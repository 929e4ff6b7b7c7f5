"""Build a tiny, randomly initialised Qwen3-architecture model and its tokenizer, offline.

Run by the managed interpreter: `python tiny_model.py DIR SEED`. Nothing is
downloaded: the tokenizer is a byte-level BPE trained on a corpus generated
from the seed, with Qwen's chat special tokens, so tinker-cookbook's `qwen3`
renderers render and parse with it. The same seed gives the same files.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]
VOCAB_SIZE = 1024

_WORDS = [
    "def",
    "solve",
    "return",
    "print",
    "sum",
    "for",
    "while",
    "if",
    "else",
    "in",
    "range",
    "and",
    "or",
    "not",
    "import",
    "the",
    "of",
    "a",
    "to",
    "is",
    "limit",
    "factors",
    "modulus",
    "residue",
    "function",
    "answer",
    "python",
    "javascript",
    "julia",
    "code",
    "test",
    "case",
    "number",
    "numbers",
    "multiple",
    "below",
    "above",
    "term",
    "sequence",
    "total",
    "result",
    "value",
    "natural",
    "prime",
    "user",
    "assistant",
    "system",
    "tool",
    "call",
    "name",
    "arguments",
    "json",
    "submit",
    "write",
    "read",
    "edit",
    "bash",
]


def corpus(seed: int, lines: int = 4000) -> list[str]:
    rng = random.Random(seed)
    symbols = list("()[]{}:;,.=+-*/%<>!#'\"_ \n\t") + [str(d) for d in range(10)]
    out = []
    for _ in range(lines):
        parts = []
        for _ in range(rng.randint(4, 16)):
            if rng.random() < 0.7:
                parts.append(rng.choice(_WORDS))
            else:
                parts.append("".join(rng.choice(symbols) for _ in range(rng.randint(1, 4))))
        out.append(" ".join(parts))
    return out


def build(out: Path, seed: int) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    fast.save_pretrained(out)

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        torch_dtype="float32",
        bos_token_id=None,
        eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
    )
    model = Qwen3ForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    parameters = sum(p.numel() for p in model.parameters())
    print(json.dumps({"dir": str(out), "seed": seed, "parameters": parameters}))


if __name__ == "__main__":
    build(Path(sys.argv[1]), int(sys.argv[2]))
