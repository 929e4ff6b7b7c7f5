"""The run explorer as one self-contained HTML file: the data, the script and the style inline.

Everything the page shows of the run (guidance, programs, summaries, judge
messages: text the models wrote, so untrusted) travels as one JSON document
in a non-executable `<script type="application/json">` element, with every
`<`, `>` and `&` written as a JSON escape so that no text can end that
element, and the page's script puts it on screen only as text nodes. The
Content-Security-Policy admits exactly the page's own script and style (by
their sha256) and loads nothing: no network, no other script, no frame; an
injected script element would not run even if one got through.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from typing import Any

DATA_ELEMENT_ID = "run-data"
_ASSETS = "atoll.guidance_ttt.explore"
# What a JSON string may hold that would end or confuse the HTML element around it.
_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<script type="application/json" id="{data_id}">{data}</script>
<script>{script}</script>
</body>
</html>
"""


def embed_json(data: Any) -> str:
    """`data` as JSON that is inert inside any HTML element: no `<`, `>` or `&` appears raw."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, sort_keys=True)
    return "".join(_ESCAPES.get(char, char) for char in text)


def _asset(name: str) -> str:
    return resources.files(_ASSETS).joinpath(name).read_text(encoding="utf-8")


def _digest(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def render(view: dict[str, Any]) -> str:
    """The explorer page for `view` (`explore.view.run_view`'s data, already redacted)."""
    script = _asset("explorer.js")
    style = _asset("explorer.css")
    for name, text in (("script", script), ("style", style)):
        if "</" in text:
            raise ValueError(f"the explorer's {name} must not contain '</'")
    policy = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_digest(script)}",
            f"style-src {_digest(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    run = view.get("run", {})
    title = f"Guidance-TTT run {run.get('run_id', '?')}"
    return TEMPLATE.format(
        policy=policy,
        title=html.escape(title),
        style=style,
        data_id=DATA_ELEMENT_ID,
        data=embed_json(view),
        script=script,
    )
