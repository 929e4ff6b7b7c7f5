"""The trusted reference solutions of the hidden-variant families, one per family and language.

Each is a complete `solve` as a policy would submit it, written from the
family's public contract alone (never from the generator). Before any Tinker
call, `atoll pi train hidden` checks every one of them through the sandbox
and checker that the rewards come from (atoll.pi_train.training.preflight): a family
whose reference does not pass every hidden case would train a policy against
a broken scorer, so the run is refused instead. Sampled code never takes
this path; only these sources do.
"""

from __future__ import annotations

MULTIPLES = {
    "python": """\
from math import gcd


def solve(factors, limit):
    distinct = sorted(set(factors))
    total = 0
    for mask in range(1, 1 << len(distinct)):
        step, chosen = 1, 0
        for bit, factor in enumerate(distinct):
            if mask >> bit & 1:
                step = step // gcd(step, factor) * factor
                chosen += 1
        count = (limit - 1) // step
        term = step * count * (count + 1) // 2
        total += term if chosen % 2 else -term
    return total
""",
    "javascript": """\
function solve(factors, limit) {
  const distinct = [...new Set(factors)].map(BigInt);
  const below = BigInt(limit) - 1n;
  const gcd = (a, b) => {
    while (b !== 0n) [a, b] = [b, a % b];
    return a;
  };
  let total = 0n;
  for (let mask = 1; mask < 1 << distinct.length; mask++) {
    let step = 1n;
    let chosen = 0;
    distinct.forEach((factor, bit) => {
      if ((mask >> bit) & 1) {
        step = (step / gcd(step, factor)) * factor;
        chosen += 1;
      }
    });
    const count = below / step;
    const term = (step * count * (count + 1n)) / 2n;
    total += chosen % 2 ? term : -term;
  }
  return total;
}
""",
}

RECURRENCE = {
    "python": """\
def solve(a, b, limit, modulus, residue):
    total = sum(t for t in (a, b) if t <= limit and t % modulus == residue)
    previous, current = a, b
    while True:
        previous, current = current, previous + current
        if current > limit:
            return total
        if current % modulus == residue:
            total += current
""",
    "javascript": """\
function solve(a, b, limit, modulus, residue) {
  const top = BigInt(limit);
  const m = BigInt(modulus);
  const r = BigInt(residue);
  let previous = BigInt(a);
  let current = BigInt(b);
  let total = 0n;
  for (const term of [previous, current]) {
    if (term <= top && term % m === r) total += term;
  }
  for (;;) {
    [previous, current] = [current, previous + current];
    if (current > top) return total;
    if (current % m === r) total += current;
  }
}
""",
}
