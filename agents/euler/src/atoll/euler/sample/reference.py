"""Reference solutions of the built-in sample: the sample's answers are computed, never stored.

Keeping programs rather than a list of answers in the package means no
answer file exists anywhere in the source tree or an installed wheel; the
answers appear only when `atoll euler import --sample` writes them into a
store's private part. `ANSWERS_DIGEST` pins the ten answers together, so a
changed solution is caught at import.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def _primes_below(limit: int) -> list[int]:
    sieve = bytearray([1]) * limit
    sieve[:2] = b"\x00\x00"
    for p in range(2, math.isqrt(limit - 1) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytes(len(range(p * p, limit, p)))
    return [i for i, flag in enumerate(sieve) if flag]


def sqrt2_digits(count: int = 1000) -> str:
    """The first `count` decimal digits of the square root of two, leading 1 included."""
    return str(math.isqrt(2 * 10 ** (2 * (count - 1))))[:count]


def _p1() -> int:
    return sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0)


def _p2() -> int:
    total, a, b = 0, 1, 2
    while a <= 4_000_000:
        if a % 2 == 0:
            total += a
        a, b = b, a + b
    return total


def _p3() -> int:
    n, factor, largest = 600851475143, 2, 1
    while factor * factor <= n:
        while n % factor == 0:
            largest, n = factor, n // factor
        factor += 1
    return max(largest, n) if n > 1 else largest


def _p4() -> int:
    best = 0
    for a in range(999, 99, -1):
        if a * 999 <= best:
            break
        for b in range(999, a - 1, -1):
            product = a * b
            if product <= best:
                break
            text = str(product)
            if text == text[::-1]:
                best = product
    return best


def _p5() -> int:
    return math.lcm(*range(1, 21))


def _p6() -> int:
    numbers = range(1, 101)
    return sum(numbers) ** 2 - sum(n * n for n in numbers)


def _p7() -> int:
    return _primes_below(200_000)[10_000]


def _p8() -> int:
    digits = [int(d) for d in sqrt2_digits()]
    return max(math.prod(digits[i : i + 13]) for i in range(len(digits) - 12))


def _p9() -> int:
    for a in range(1, 333):
        for b in range(a + 1, (1000 - a) // 2 + 1):
            c = 1000 - a - b
            if a * a + b * b == c * c:
                return a * b * c
    raise ArithmeticError("no Pythagorean triple sums to 1000")


def _p10() -> int:
    return sum(_primes_below(2_000_000))


SOLUTIONS: dict[int, Callable[[], int]] = {
    1: _p1,
    2: _p2,
    3: _p3,
    4: _p4,
    5: _p5,
    6: _p6,
    7: _p7,
    8: _p8,
    9: _p9,
    10: _p10,
}
