"""`atoll tinker serve`'s server: OpenAI chat completions over a Tinker sampling client.

Run by the managed Python 3.11 interpreter (it has the tinker SDK and
tinker-cookbook). The cookbook renderer named by `--renderer` turns the
request's messages and tools into the prompt tokens and parses the sampled
tokens back into text, reasoning and tool calls; `openai_surface` (beside
this file) checks requests and writes replies, and atoll-core's
`chat_stream` (its folder on PYTHONPATH, see `atoll.pi_train.env.portable_path`)
streams them. A tool call the renderer
could not parse is returned as text, never as an error: the model made it,
and the agent should see it as the model wrote it. Listens on 127.0.0.1
only. The Tinker key comes from `TINKER_API_KEY`; a bearer token for
callers, when required, from `ATOLL_SERVE_API_KEY`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chat_stream  # noqa: E402 - atoll.core.portable's, on PYTHONPATH
import openai_surface as surface  # noqa: E402 - beside this file, see above
import tinker  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import JSONResponse, Response, StreamingResponse  # noqa: E402
from tinker_cookbook import renderers  # noqa: E402
from tinker_cookbook.tokenizer_utils import get_tokenizer  # noqa: E402

#: Seconds a request in flight may still take once the server is asked to stop.
SHUTDOWN_GRACE_S = 2


def cookbook_messages(request: surface.ChatRequest, renderer: Any) -> list[Any]:
    """The request's messages as the renderer's, the tools in its own tool-aware prefix."""
    messages: list[Any] = []
    for m in request.messages:
        entry: dict[str, Any] = {"role": m["role"], "content": m["content"]}
        if m.get("tool_calls"):
            entry["tool_calls"] = [
                renderers.ToolCall(
                    function=renderers.ToolCall.FunctionBody(
                        name=c["name"], arguments=c["arguments"]
                    ),
                    id=c["id"] or None,
                )
                for c in m["tool_calls"]
            ]
        for key in ("tool_call_id", "name"):
            if m.get(key):
                entry[key] = m[key]
        messages.append(entry)
    if not request.tools:
        return messages
    system = ""
    if messages and messages[0]["role"] == "system":
        system = messages.pop(0)["content"]
    specs = [
        renderers.ToolSpec(name=t["name"], description=t["description"], parameters=t["parameters"])
        for t in request.tools
    ]
    try:
        prefix = renderer.create_conversation_prefix_with_tools(tools=specs, system_prompt=system)
    except NotImplementedError:
        raise surface.RequestError(
            f"the renderer {type(renderer).__name__} does not render tools; serve with one that does"
        ) from None
    return [*prefix, *messages]


def reply_from_tokens(
    renderer: Any, tokens: list[int], stop_reason: str, prompt_tokens: int
) -> surface.Reply:
    """The sampled tokens as the renderer parses them; malformed tool calls stay text."""
    message, _termination = renderer.parse_response(tokens)
    openai = renderer.to_openai_message(message)
    content = openai.get("content") or ""
    for unparsed in message.get("unparsed_tool_calls") or []:
        # The renderer took these out of the text (or left an unterminated one in it):
        # put each back where the agent will read it, as the model wrote it.
        if unparsed.raw_text not in content:
            content = content + unparsed.raw_text
    calls = []
    for call in openai.get("tool_calls") or []:
        arguments = call["function"]["arguments"]
        calls.append(
            {
                "id": call.get("id") or "call_" + uuid.uuid4().hex[:24],
                "name": call["function"]["name"],
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            }
        )
    finish = "length" if stop_reason == "length" else ("tool_calls" if calls else "stop")
    return surface.Reply(
        content=content,
        tool_calls=calls,
        reasoning=openai.get("reasoning_content") or None,
        finish_reason=finish,
        prompt_tokens=prompt_tokens,
        completion_tokens=len(tokens),
    )


def text_reply(
    renderer: Any, tokens: list[int], stop_reason: str, prompt_tokens: int
) -> surface.Reply:
    """The sampled tokens decoded as plain content (no tool calls): Pi reads the model's text."""
    sampled = len(tokens)
    stops = {x for x in renderer.get_stop_sequences() if isinstance(x, int)}
    while tokens and tokens[-1] in stops:  # the end-of-turn token is not the model's text
        tokens = tokens[:-1]
    return surface.Reply(
        content=renderer.tokenizer.decode(tokens, skip_special_tokens=False),
        tool_calls=[],
        reasoning=None,
        finish_reason="length" if stop_reason == "length" else "stop",
        prompt_tokens=prompt_tokens,
        completion_tokens=sampled,
    )


def build_app(
    sampler: Any,
    renderer: Any,
    served: str,
    base_model: str,
    model_path: str | None,
    cap: int | None,
) -> FastAPI:
    app = FastAPI(title="atoll tinker serve")
    key = os.environ.get("ATOLL_SERVE_API_KEY") or None

    def refused(request: Request) -> Response | None:
        if key is not None and request.headers.get("authorization") != f"Bearer {key}":
            body = surface.error_body("a valid bearer token is required", "authentication_error")
            return JSONResponse(body, status_code=401)
        return None

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        return refused(request) or JSONResponse(surface.models_list(served, base_model, model_path))

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        denied = refused(request)
        if denied is not None:
            return denied
        try:
            try:
                body = json.loads(await request.body())
            except ValueError:
                raise surface.RequestError("the request body is not JSON") from None
            parsed = surface.parse_request(body, served, cap)
            try:
                prompt = renderer.build_generation_prompt(cookbook_messages(parsed, renderer))
            except ValueError as exc:  # the cookbook's RendererError is a ValueError
                message = f"the renderer cannot render these messages: {exc}"
                raise surface.RequestError(message) from None
        except surface.RequestError as exc:
            return JSONResponse(surface.error_body(str(exc), exc.kind), status_code=exc.status)
        params = tinker.SamplingParams(
            max_tokens=parsed.max_tokens,
            temperature=parsed.temperature,
            stop=renderer.get_stop_sequences(),
        )
        try:
            result = await sampler.sample_async(
                prompt=prompt, num_samples=1, sampling_params=params
            )
        except Exception as exc:  # the sampler's failure is the provider's, never the model's
            body = surface.error_body(f"Tinker sampling failed: {exc}", "upstream_error")
            return JSONResponse(body, status_code=502)
        sequence = result.sequences[0]
        try:
            reply = reply_from_tokens(
                renderer, list(sequence.tokens), str(sequence.stop_reason), prompt.length
            )
        except Exception:  # a reply the renderer cannot parse is the model's text, as written
            reply = text_reply(
                renderer, list(sequence.tokens), str(sequence.stop_reason), prompt.length
            )
        whole = surface.completion(surface.apply_stop(reply, parsed.stop), served)
        if not parsed.stream:
            return JSONResponse(whole)
        events = chat_stream.events(whole, parsed.include_usage)
        return StreamingResponse(events, media_type="text/event-stream")

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description="OpenAI chat completions over Tinker (atoll)")
    parser.add_argument("--base-model", required=True)
    parser.add_argument("--model-path", default=None)
    parser.add_argument("--state-path", default=None)
    parser.add_argument("--renderer", required=True)
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--tinker-url", required=True)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    tokenizer = get_tokenizer(args.base_model)
    renderer = renderers.get_renderer(args.renderer, tokenizer)
    service = tinker.ServiceClient(base_url=args.tinker_url)
    if args.state_path:
        # SkyRL tx 0.3.0 samples a sampler checkpoint only while the model that saved it is
        # loaded, and it unloads a model once its training session ends. The training state
        # saved beside it holds the same weights: loaded into a model of this server's own
        # session, they are saved for sampling again and served for as long as it runs.
        trainer = service.create_training_client_from_state(args.state_path)
        sampler = trainer.save_weights_and_get_sampling_client()
    elif args.model_path:
        sampler = service.create_sampling_client(model_path=args.model_path)
    else:
        sampler = service.create_sampling_client(base_model=args.base_model)
    app = build_app(
        sampler, renderer, args.served_model_name, args.base_model, args.model_path, args.max_tokens
    )
    # On SIGTERM uvicorn waits for the requests in flight, and a sample may take minutes:
    # they get a moment, then are cancelled, so a stop never waits on the model.
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )


if __name__ == "__main__":
    main()
