"""Scripted models for whole-run tests: guidance that names a shelf width, an executor that obeys it.

The guidance model proposes "shelf width factor F"; the executor turns that
into a real C++ shelf packer whose shelves are F times the parent's width
factor times the square root of the pieces' total bounding-box area, so
different guidance and different parents give programs of really different
quality when the real judge scores them. A factor of 0 makes the executor
write a program that does not compile.

Two flavours of guidance script:

- `CountingGuidance` varies its answer by call number (with some malformed
  answers), for runs whose exact course does not matter;
- `PromptGuidance` answers as a pure function of the prompt, so that a run
  killed and resumed must end with exactly the archive of an uninterrupted
  run: any resampled slot gets the same answer again.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from support.openai_server import NumberedScript, Reply

MALFORMED = "I would widen the shelves, but I forgot the tags."
FACTORS = ("1.0", "0.5", "2.0", "0", "1.5", "3.0", "0.75", "1.25", "2.5", "4.0")

PACKER = """// Shelf packer, width factor FACTOR.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<long long> minx(n), miny(n), w(n), h(n), X(n), Y(n);
    long long area = 0;
    for (int i = 0; i < n; i++) {
        int k;
        if (scanf("%d", &k) != 1) return 1;
        long long lx = 1 << 30, hx = -(1 << 30), ly = 1 << 30, hy = -(1 << 30);
        for (int j = 0; j < k; j++) {
            long long x, y;
            if (scanf("%lld %lld", &x, &y) != 2) return 1;
            lx = std::min(lx, x); hx = std::max(hx, x);
            ly = std::min(ly, y); hy = std::max(hy, y);
        }
        minx[i] = lx; miny[i] = ly; w[i] = hx - lx + 1; h[i] = hy - ly + 1;
        area += w[i] * h[i];
    }
    std::vector<int> order(n);
    for (int i = 0; i < n; i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h[a] > h[b]; });
    long long limit = (long long)std::ceil(std::sqrt((double)area) * FACTOR);
    long long x = 0, y = 0, shelf = 0, width = 0;
    for (int i : order) {
        if (x > 0 && x + w[i] > limit) { y += shelf; x = 0; shelf = 0; }
        X[i] = x - minx[i];
        Y[i] = y - miny[i];
        x += w[i];
        shelf = std::max(shelf, h[i]);
        width = std::max(width, x);
    }
    printf("%lld %lld\\n", width, y + shelf);
    for (int i = 0; i < n; i++) printf("%lld %lld 0 0\\n", X[i], Y[i]);
    return 0;
}
"""

_GUIDED = re.compile(r"Use shelf width factor ([0-9.]*[0-9])")
_PARENT = re.compile(r"// Shelf packer, width factor ([0-9.]*[0-9])")


def guidance_text(factor: str) -> str:
    return f"Thinking about it...\n<guidance>Use shelf width factor {factor}.</guidance>"


def packer(factor: str) -> str:
    if float(factor) == 0:
        return PACKER.replace("FACTOR", "0").replace("return 0;", "return 0")  # no semicolon
    return PACKER.replace("FACTOR", factor)


def prompt_of(request: dict[str, Any]) -> str:
    return str((request.get("messages") or [{}])[-1].get("content", ""))


class CountingGuidance(NumberedScript):
    """Answer n: factor FACTORS[n mod 10]; every `malformed_every`-th answer has no guidance tags."""

    def __init__(self, malformed_every: int = 5) -> None:
        super().__init__()
        self.malformed_every = malformed_every

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        if self.malformed_every and number % self.malformed_every == 0:
            return Reply(content=MALFORMED, completion_tokens=11)
        return Reply(content=guidance_text(FACTORS[number % len(FACTORS)]), completion_tokens=17)


# The salts of the crash tests were chosen on prompts whose task contract named the
# compile flags as they then were; the prompt is hashed with today's flags written
# that way, so that each test keeps the course its kill points were chosen on.
COMPILE_FLAGS_NOW = "g++ -O2 -pipe -std=gnu++17"
COMPILE_FLAGS_TUNED = "g++ -O2 -pipe -static -s -std=gnu++17"


class PromptGuidance:
    """The answer is a pure function of the prompt and `salt` (some prompts get malformed answers)."""

    def __init__(self, salt: str = "") -> None:
        self.salt = salt

    def __call__(self, request: dict[str, Any]) -> Reply:
        prompt = prompt_of(request).replace(COMPILE_FLAGS_NOW, COMPILE_FLAGS_TUNED)
        digest = int(hashlib.sha256((self.salt + prompt).encode()).hexdigest(), 16)
        if digest % 5 == 3:
            return Reply(content=MALFORMED, completion_tokens=11)
        return Reply(content=guidance_text(FACTORS[digest % len(FACTORS)]), completion_tokens=17)


class PackerExecutor:
    """Scales the parent's shelf width by the guidance's factor; a pure function of the prompt."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        prompt = prompt_of(request)
        guided = _GUIDED.search(prompt)
        parent = _PARENT.search(prompt)
        factor = float(guided.group(1)) if guided else 1.0
        factor *= float(parent.group(1)) if parent else 1.0
        factor_text = f"{factor:.4g}"
        program = packer(factor_text)
        return Reply(
            content=(
                f"<solution>\n```cpp\n{program}```\n</solution>\n"
                f"<summary>Shelf packer, tallest first, shelves {factor_text} x sqrt(area) wide."
                "</summary>"
            ),
            completion_tokens=300,
        )
