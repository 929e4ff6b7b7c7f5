"""`atoll tinker serve` for real: the cookbook renderer, the local Tinker, real Pi, a promotion.

Nothing is scripted here: the renderer is tinker-cookbook's `qwen3` over the
tiny model's tokenizer, sampling goes to the session's SkyRL tx server, Pi
0.73.1 runs its tools in a container, and `atoll pi train promote` drives
atoll-euler's transfer and Euler evaluations. A random tiny model writes
noise, so a rollout ends as the model's own failure; what is checked is that
nothing ends as an error of the server, and that the promotion refuses it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import ci
from support.tinker_local import GROUP_SIZE, MAX_TOKENS, run_atoll

from atoll.pi_train import env as managed_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

# Small shapes, always the same: SkyRL tx compiles its sampler once per prompt-length bucket
# and per `max_tokens`, so every request here samples exactly MAX_TOKENS (the server's cap, the
# training tests' too), and Pi gets a one-line system prompt (its own is ~2k tokens of the tiny
# model's vocabulary, which puts every prompt in a bucket that samples several times slower).
# `atoll tinker serve` passes ATOLL_SERVE_API_KEY from its environment to the server.
TOKEN = "serve-test-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
SYSTEM_PROMPT = "You are a coding agent. Use the tools to write, run and fix programs.\n"


@pytest.fixture(scope="module")
def system_prompt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prompt") / "system.md"
    path.write_text(SYSTEM_PROMPT)
    return path


def _managed_python(code: str, *args: str) -> Any:
    """Run `code` with the managed interpreter (tinker, the cookbook); its JSON output."""
    env = managed_env.ensure(lambda line: None)
    script = managed_env.managed_script("openai_serve").parent
    done = subprocess.run(
        [str(env.python), "-c", code, str(script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": managed_env.portable_path(os.environ),  # as `atoll tinker serve` runs it
        },
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


RENDER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import openai_surface as surface
from openai_serve import cookbook_messages, reply_from_tokens
from tinker_cookbook import renderers
from tinker_cookbook.tokenizer_utils import get_tokenizer

tokenizer = get_tokenizer(sys.argv[2])
renderer = renderers.get_renderer("qwen3", tokenizer)
cases = json.loads(sys.argv[3])
replies = {}
for name, text in cases.items():
    tokens = tokenizer.encode(text, add_special_tokens=False)
    stop = "length" if name == "cut" else "stop"
    replies[name] = reply_from_tokens(renderer, tokens, stop, 11).__dict__
request = surface.parse_request(json.loads(sys.argv[4]), "tiny", None)
prompt = renderer.build_generation_prompt(cookbook_messages(request, renderer))
# A history the renderer cannot render is the caller's bad request (400), never a 500;
# the sampler is never reached (None here).
from fastapi.testclient import TestClient
from openai_serve import build_app, text_reply
client = TestClient(build_app(None, renderer, "tiny", sys.argv[2], None, None))
bad = json.loads(sys.argv[4])
bad["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{not json"
refused = client.post("/v1/chat/completions", json=bad)
# A reply the renderer cannot parse is served as the text the model wrote.
plain = text_reply(renderer, tokenizer.encode("Hi <tool_call> x<|im_end|>"), "stop", 3)
print(json.dumps({"replies": replies, "prompt": tokenizer.decode(prompt.to_ints()),
                  "refused": [refused.status_code, refused.json()], "plain": plain.__dict__}))
"""

CALL = (
    '<tool_call>\n{"name": "bash", "arguments": {"command": "python3 solution.py"}}\n</tool_call>'
)
CASES = {
    "text": "The answer is 233168.<|im_end|>",
    "tool": f"I will run it.\n{CALL}<|im_end|>",
    "two_tools": f"{CALL}\n{CALL.replace('bash', 'read')}<|im_end|>",
    "bad_json": 'Running.\n<tool_call>\n{"name": "bash", "arguments": {"command": }\n</tool_call><|im_end|>',
    "no_arguments": '<tool_call>\n{"name": "bash"}\n</tool_call><|im_end|>',
    "unterminated": 'Now:\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}<|im_end|>',
    "cut": "Let me think about the sum of",
}
REQUEST = {
    "model": "tiny",
    "messages": [
        {"role": "system", "content": "You are Pi."},
        {"role": "user", "content": "Sum the numbers."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "data.txt"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a shell command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ],
}


def test_the_cookbook_renderer_parses_tool_calls_and_malformed_ones_stay_text(
    tiny_model: Path,
) -> None:
    found = _managed_python(RENDER, str(tiny_model), json.dumps(CASES), json.dumps(REQUEST))
    replies = found["replies"]
    assert replies["text"]["content"] == "The answer is 233168."
    assert replies["text"]["tool_calls"] == [] and replies["text"]["finish_reason"] == "stop"

    tool = replies["tool"]
    assert tool["finish_reason"] == "tool_calls" and tool["content"].strip() == "I will run it."
    assert [(c["name"], json.loads(c["arguments"])) for c in tool["tool_calls"]] == [
        ("bash", {"command": "python3 solution.py"})
    ]
    assert tool["tool_calls"][0]["id"].startswith("call_")
    assert [c["name"] for c in replies["two_tools"]["tool_calls"]] == ["bash", "read"]
    ids = {c["id"] for c in replies["two_tools"]["tool_calls"]}
    assert len(ids) == 2

    # Malformed calls come back as the text the model wrote, once, and are not calls.
    for name in ("bad_json", "no_arguments", "unterminated"):
        reply = replies[name]
        assert reply["tool_calls"] == [] and reply["finish_reason"] == "stop", name
        assert reply["content"].count("<tool_call>") == 1, name
    assert '{"command": }' in replies["bad_json"]["content"]
    assert replies["bad_json"]["content"].startswith("Running.")
    assert replies["unterminated"]["content"].startswith("Now:\n<tool_call>")

    cut = replies["cut"]
    assert cut["finish_reason"] == "length" and cut["content"].startswith("Let me think")
    assert cut["prompt_tokens"] == 11 and cut["completion_tokens"] > 0

    # The request's tools are in the renderer's own tool prefix; its tool call and result in turn.
    prompt = found["prompt"]
    assert prompt.startswith("<|im_start|>system\nYou are Pi.")
    assert "<tools>" in prompt and '"name": "bash"' in prompt
    assert '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>' in prompt
    assert "<tool_response>\ndata.txt\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")

    status, body = found["refused"]
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("the renderer cannot render these messages")
    assert found["plain"]["content"] == "Hi <tool_call> x" and not found["plain"]["tool_calls"]


@pytest.fixture(scope="module")
def rollouts_ready() -> None:
    """Pi installed, the Docker engine answering and the rollout image built."""
    from atoll.pi import container, image, install

    hint = "CI installs Pi, starts the Docker engine and builds the rollout image first"
    try:
        install.ensure()
        client = container.connect()
        image.ensure(client)
        client.close()
    except (install.PiUnavailable, container.ContainerError) as exc:
        ci.need(False, f"no Pi rollouts here: {exc}", hint)


@pytest.fixture(scope="module")
def served(
    server_env: dict[str, str],
    venv_bin: Path,
    tiny_model: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, str]]:
    """`atoll tinker serve` on the tiny base model, as a script starts it: wait for its export lines."""
    ready = tmp_path_factory.mktemp("serve") / "ready.json"
    process = subprocess.Popen(
        [str(venv_bin / "atoll"), "tinker", "serve", "--base-model", str(tiny_model),
         "--renderer", "qwen3", "--max-tokens", MAX_TOKENS, "--ready-file", str(ready)],
        env={**server_env, "ATOLL_SERVE_API_KEY": TOKEN},  # every request must carry it
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        # The ready file is written before the lines are printed: a script may wait on either.
        deadline = time.monotonic() + 300
        while not ready.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.5)
        assert ready.exists(), process.stderr.read() if process.stderr else ""
        exports = dict(
            process.stdout.readline().strip().removeprefix("export ").partition("=")[::2]
            for _ in range(2)
        )
        assert set(exports) == {"ATOLL_SERVE_BASE_URL", "ATOLL_SERVE_MODEL"}
        assert json.loads(ready.read_text())["base_url"] == exports["ATOLL_SERVE_BASE_URL"]
        yield exports
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
        assert not ready.exists()


def test_served_tiny_model_answers_chat_completions(served: dict[str, str]) -> None:
    url, model = served["ATOLL_SERVE_BASE_URL"], served["ATOLL_SERVE_MODEL"]
    assert url.startswith("http://127.0.0.1:") and model == "model"
    assert httpx.get(f"{url}/models", timeout=30).status_code == 401  # no token
    wrong_token = {"authorization": "Bearer not-the-token"}
    assert httpx.get(f"{url}/models", headers=wrong_token, timeout=30).status_code == 401
    listed = httpx.get(f"{url}/models", headers=AUTH, timeout=30).json()
    assert [m["id"] for m in listed["data"]] == [model] and listed["data"][0]["model_path"] is None
    body = {"model": model, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 64}
    whole = httpx.post(f"{url}/chat/completions", json=body, headers=AUTH, timeout=600).json()
    usage = whole["usage"]
    assert 0 < usage["completion_tokens"] <= 16 and usage["prompt_tokens"] > 3
    assert whole["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")
    streamed = httpx.post(
        f"{url}/chat/completions",
        json={
            **body,
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": REQUEST["tools"],
        },
        headers=AUTH,
        timeout=600,
    )
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [line for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    last = json.loads(events[-2][len("data: ") :])
    assert last["choices"] == [] and last["usage"]["completion_tokens"] <= 16
    wrong = httpx.post(
        f"{url}/chat/completions", json={**body, "model": "gpt-4"}, headers=AUTH, timeout=30
    )
    assert wrong.status_code == 404 and "not served here" in wrong.json()["error"]["message"]


def test_real_pi_runs_a_rollout_on_the_served_model(
    served: dict[str, str],
    rollouts_ready: None,
    system_prompt: Path,
    venv_bin: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "rollout"
    env = {**os.environ, "ATOLL_SERVE_TEST_KEY": TOKEN}
    done = run_atoll(
        venv_bin, env, "pi", "run", "-o", str(out), "--language", "python",
        "-p", "Write solution.py that prints the sum of the multiples of 3 or 5 below 1000, run it, say the sum.",
        "--ak", f"base_url={served['ATOLL_SERVE_BASE_URL']}", "--ak", f"model={served['ATOLL_SERVE_MODEL']}",
        "--ak", "api_key_env=ATOLL_SERVE_TEST_KEY", "--ak", "max_turns=2", "--ak", "timeout_s=600", "--ak", f"system_prompt={system_prompt}",
        timeout=900,
    )  # fmt: skip
    record = json.loads((out / "record.json").read_text())
    # The model's own failure at worst: Pi completed (or hit the turn limit), never a provider error.
    assert record["outcome"] in ("completed", "limit"), (record.get("error"), done.stderr[-2000:])
    assert record["scorable"] is True and record["error"] is None
    assert record["stop_reason"] in ("stop", "length", "toolUse", "aborted")
    assert record["usage"]["output_tokens"] > 0 and record["usage"]["input_tokens"] > 0


RULE = {
    "format": 2,
    "checkpoints": 1,
    "transfer": {"min_delta": 0.1, "alpha": 0.1},
    "euler": {"min_delta": 0.0, "alpha": 0.5},
}


@pytest.mark.long
def test_a_promotion_of_the_tiny_model_runs_end_to_end_and_refuses_it(
    server_env: dict[str, str],
    rollouts_ready: None,
    system_prompt: Path,
    venv_bin: Path,
    tiny_model: Path,
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    assert (
        run_atoll(
            venv_bin, server_env, "euler", "import", "--sample", "--store", str(store)
        ).returncode
        == 0
    )
    # The candidate is one iteration of answer training on the same store: its short prompts
    # sample in the buckets the training tests compiled already (hidden training's are longer).
    run = tmp_path / "run"
    trained = run_atoll(
        venv_bin, server_env, "pi", "train", "answer", "--base-model", str(tiny_model),
        "--iterations", "1", "--groups-per-batch", "1", "--group-size", GROUP_SIZE,
        "--max-tokens", MAX_TOKENS, "--languages", "python", "--store", str(store),
        "--out", str(run),
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    checkpoint = json.loads((run / "checkpoints.jsonl").read_text().splitlines()[-1])[
        "sampler_path"
    ]
    rule = tmp_path / "rule.json"
    rule.write_text(json.dumps(RULE))
    # The run trained on problem 1: promoting on it is refused before anything is served.
    common = [
        "pi", "train", "promote", str(run), "--checkpoint", checkpoint, "--rule", str(rule),
        "--store", str(store),
    ]  # fmt: skip
    refused = run_atoll(venv_bin, server_env, *common, "--problems", "1", timeout=300)
    assert refused.returncode == 2 and "includes problems trained on (1 by" in refused.stderr
    assert not (run / "promotions").exists()
    argv = [
        *common, "--problems", "2", "--languages", "python", "--samples", "1",
        "--transfer-samples", "1", "--workers", "4", "--max-turns", "2", "--timeout", "600",
        "--max-tokens", MAX_TOKENS,
        "--system-prompt", str(system_prompt),
    ]  # fmt: skip
    done = run_atoll(venv_bin, server_env, *argv, timeout=1500)
    assert done.returncode == 3, done.stderr[-3000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["decision"] == "do not promote" and summary["checkpoint"] == checkpoint
    record_path = Path(summary["record"])
    record = json.loads(record_path.read_text())
    promotion = record_path.parent
    manifest = json.loads((promotion / "manifest.json").read_text())

    # The rule was fixed, by hash, before the first rollout of either side.
    assert manifest["rule"] == RULE and record["rule_sha256"] == manifest["rule_sha256"]
    rows = []
    for side in ("baseline", "candidate"):
        for part in ("transfer", "euler"):
            rows += [
                json.loads(x)
                for x in (promotion / side / part / "rows.jsonl").read_text().splitlines()
            ]
    assert len(rows) == 2 * (4 + 1)
    assert all(r["status"] == "scored" for r in rows)  # no infrastructure error, server's or other
    assert min(r["created_at"] for r in rows) >= manifest["rule_fixed_at"]
    assert json.loads((run / "promotion_rule.json").read_text())["rule"] == RULE
    candidate = json.loads((promotion / "candidate" / "transfer" / "manifest.json").read_text())
    assert candidate["acceptance"] is None  # the promotion's rule decides, per task
    assert candidate["model"]["components"]["model_revision"] == checkpoint
    baseline = json.loads((promotion / "baseline" / "transfer" / "manifest.json").read_text())
    assert baseline["model"]["components"]["model_revision"] is None
    assert baseline["model"]["signature"] != candidate["model"]["signature"]

    # The decision and every input in one record; the noise model never passes, so no promotion.
    assert record["promoted"] is False and record["transfer"]["holds"] is False
    assert record["transfer"]["test"]["unit"] == "transfer task"
    assert record["transfer"]["test"]["units_compared"] == 4
    assert record["transfer"]["descriptive"]["overall"]["a"]["attempts"] == 4
    assert record["euler"]["candidate"]["attempts"] == 1
    assert record["euler"]["test"]["unit"] == "problem"
    assert [u["unit"] for u in record["euler"]["test"]["per_unit"]] == ["2"]
    assert "fisher" in record["euler"]["descriptive"]
    assert record["holm"]["m"] == 1 and record["comparison"] == 1
    assert "Holm" in record["statistics"] and "descriptive only" in record["statistics"]
    for side in ("baseline", "candidate"):
        assert record["euler"][side]["rows_sha256"] is not None
        assert record["inputs"][f"{side}_transfer_manifest_sha256"] is not None
    assert not (run / "promoted.json").exists()
    # --workers reaches the evaluations (the transfer suite's four tasks run side by side).
    assert ", 4 at a time" in (promotion / "candidate" / "euler.log").read_text()

    # A rerun reports the decision it made; nothing is sampled again.
    again = run_atoll(venv_bin, server_env, *argv, timeout=300)
    assert again.returncode == 3 and "decided already" in again.stderr
    assert json.loads(record_path.read_text()) == record
