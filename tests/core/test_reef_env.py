"""Where Reef is found: one reading of REEF_URL and REEF_TOKEN for every plugin."""

from __future__ import annotations

import pytest

from atoll.core import reef_env
from atoll.core.doctor import check_reef


@pytest.mark.parametrize(
    ("environ", "named", "used"),
    [
        ({}, None, reef_env.DEFAULT_URL),
        ({"REEF_URL": "   "}, None, reef_env.DEFAULT_URL),
        ({"REEF_URL": " http://10.0.0.2:9000/ "}, "http://10.0.0.2:9000", "http://10.0.0.2:9000"),
    ],
    ids=["unset", "blank", "named"],
)
def test_the_url_reef_env_names(environ: dict[str, str], named: str | None, used: str) -> None:
    assert reef_env.named_url(environ) == named
    assert reef_env.url(environ) == used


def test_a_blank_token_is_no_token() -> None:
    assert reef_env.named_token({"REEF_TOKEN": " \t"}) is None
    assert reef_env.named_token({"REEF_TOKEN": " s3cret "}) == "s3cret"
    assert reef_env.named_token({}) is None


def test_doctor_checks_the_default_reef_when_reef_url_is_blank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REEF_URL", " ")
    finding = check_reef()  # answering or not, the finding names the URL it checked
    assert f"Reef server at {reef_env.DEFAULT_URL}" in finding.detail
