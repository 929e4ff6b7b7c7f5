"""What a run shows people (its trajectory, its explorer page) never shows a credential."""

from __future__ import annotations

from atoll.guidance_ttt.redaction import MARKER, redact, secret_values

KEY = "sk-live-0123456789abcdef"
TOKEN = "reef-token-fedcba9876543210"


def test_credential_values_are_redacted_wherever_they_appear():
    environ = {
        "OPENAI_API_KEY": KEY,
        "REEF_TOKEN": TOKEN,
        "HOME": "/root/somewhere",  # no credential by its name
        "TINKER_API_KEY": "short",  # too short to tell from ordinary text
        "KEYBOARD_LAYOUT": "us-international",  # KEY only inside a word
    }
    secrets = secret_values(environ)
    assert set(secrets) == {KEY, TOKEN}
    data = {
        "guidance": f"Use the key {KEY} and {TOKEN}.",
        "nested": [{"url": "https://user:pa55word@example.test/v1"}, 3, None, 1.5],
        "home": "/root/somewhere",
        "layout": "us-international",
    }
    shown = redact(data, secrets)
    assert shown == {
        "guidance": f"Use the key {MARKER} and {MARKER}.",
        "nested": [{"url": f"https://{MARKER}@example.test/v1"}, 3, None, 1.5],
        "home": "/root/somewhere",
        "layout": "us-international",
    }
    assert data["guidance"].startswith("Use the key sk-live")  # the input is left as it was


def test_a_secret_inside_another_is_redacted_whole():
    inner, outer = "abcdefgh12", "xx-abcdefgh12-yy"
    secrets = secret_values({"A_TOKEN": inner, "B_SECRET": outer})
    assert secrets == (outer, inner)  # the longer one first: no fragment of it survives
    assert redact(f"[{outer}] [{inner}]", secrets) == f"[{MARKER}] [{MARKER}]"
