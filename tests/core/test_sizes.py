"""Byte sizes written back the way a user reads them."""

from __future__ import annotations

import pytest

from atoll.core.sizes import GiB, KiB, MiB, exact


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (2 * GiB, "2 GiB"),
        (1536 * MiB, "1536 MiB"),  # not a whole number of GiB
        (64 * KiB, "64 KiB"),
        (1536, "1536 bytes"),
        (0, "0 bytes"),
    ],
)
def test_exact_uses_the_largest_unit_that_divides(size: int, text: str) -> None:
    assert exact(size) == text


def test_units_are_binary() -> None:
    assert (KiB, MiB, GiB) == (2**10, 2**20, 2**30)
