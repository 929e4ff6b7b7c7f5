"""The guidance policy on Tinker: sampled through OpenAI chat completions, trained in place.

Run by the managed Python 3.11 interpreter (atoll-pi-train's environment: the
tinker SDK and tinker-cookbook), never imported by atoll itself. One process
holds the run's LoRA training client and the sampler of its current weights:

- `POST /v1/chat/completions` renders the messages with the cookbook renderer
  the run names, samples once at the request's temperature, top-p and top-k,
  and answers with the text and, beside it, exactly what was sampled: the
  prompt's token ids (`prompt_token_ids`), the completion's token ids and
  their sampled logprobs (`choices[0].token_ids`, `choices[0].logprobs`),
  and the sampler weights that produced them (`system_fingerprint`). Reef,
  in front of this server, records the whole answer, so its record holds the
  tokens the update trains on.
- `POST /atoll/train` applies one step of the method: an optional KL-to-base
  shaping of the advantages, one `forward_backward` with the
  `importance_sampling` loss over the completion tokens (the prompt's carry
  advantage 0), one Adam `optim_step`, then the training state and the
  sampler weights saved durably under the step's name, and sampling switched
  to the new weights before the answer returns.
- `POST /atoll/logprobs` sums the completion logprobs of token sequences under
  the current sampler (how a caller sees that an update moved the policy).
- `GET /atoll/status` says how many steps the weights hold and which sampler serves.

A step is applied once: the server refuses a step number at or below the
steps its weights already hold. A restarted server resumes from the training
state (with its optimizer) of the last step the caller recorded.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

# The method's advantage arithmetic is plain Python in the package above this folder
# (atoll.guidance_ttt.training.advantage), shared with the agent and its tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tinker  # noqa: E402
import uvicorn  # noqa: E402
from advantage import kl_shaped  # noqa: E402 - beside the managed folder, see above
from fastapi import FastAPI, HTTPException, Request  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402
from tinker_cookbook import renderers  # noqa: E402
from tinker_cookbook.tokenizer_utils import get_tokenizer  # noqa: E402

# atoll.guidance_ttt.training.failpoints: a crash-consistency test names `<point>:<step>`.
FAILPOINT_VARIABLE = "ATOLL_GUIDANCE_TTT_FAILPOINT"
ADAM_BETAS = (0.9, 0.95)
ADAM_EPS = 1e-8


class Policy:
    """The training client, the current sampler and the base sampler of one run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tokenizer = get_tokenizer(args.base_model)
        self.renderer = renderers.get_renderer(args.renderer, self.tokenizer)
        self.service = tinker.ServiceClient(base_url=args.tinker_url)
        if args.resume_state:
            self.trainer = self.service.create_training_client_from_state_with_optimizer(
                args.resume_state
            )
        elif args.load_weights:
            self.trainer = self.service.create_training_client_from_state(args.load_weights)
        else:
            self.trainer = self.service.create_lora_training_client(
                base_model=args.base_model, rank=args.lora_rank
            )
        self.trained_steps = int(args.trained_steps)
        self.sampler_name = args.sampler_name or f"base:{args.base_model}"
        # A sampler of exactly the loaded weights, in this server's own session.
        self.sampler = self.trainer.save_weights_and_get_sampling_client()
        self._base: Any = None
        self.lock = threading.Lock()
        self._local = threading.local()

    def local_renderer(self) -> Any:
        """This thread's own renderer over its own copy of the tokenizer.

        A fast (Rust) tokenizer refuses use from two threads at once ("Already
        borrowed"), requests are served on a thread pool, and the tinker SDK
        holds the shared instance too: each serving thread renders, parses and
        decodes with a copy nobody else touches.
        """
        renderer = getattr(self._local, "renderer", None)
        if renderer is None:
            renderer = renderers.get_renderer(self.args.renderer, copy.deepcopy(self.tokenizer))
            self._local.renderer = renderer
        return renderer

    def base_sampler(self) -> Any:
        if self._base is None:
            self._base = self.service.create_sampling_client(base_model=self.args.base_model)
        return self._base


def _failpoint(point: str, step: int) -> None:
    """SIGKILL this server where a crash-consistency test asked for it."""
    if os.environ.get(FAILPOINT_VARIABLE) == f"{point}:{step}":
        os.kill(os.getpid(), signal.SIGKILL)


def _messages(body: dict[str, Any]) -> list[renderers.Message]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise HTTPException(400, "messages must be a non-empty list")
    messages = []
    for i, message in enumerate(raw):
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "user",
            "assistant",
        ):
            raise HTTPException(400, f"messages[{i}] needs a system, user or assistant role")
        content = message.get("content")
        if not isinstance(content, str):
            raise HTTPException(400, f"messages[{i}].content must be text")
        messages.append(renderers.Message(role=message["role"], content=content))
    return messages


def _max_tokens(body: dict[str, Any]) -> int:
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise HTTPException(400, "max_completion_tokens must be a positive integer")
    return value


def _text(renderer: Any, tokens: list[int]) -> tuple[str, str | None]:
    """The answer's visible text and its reasoning, as the renderer parses them."""
    try:
        message, _ = renderer.parse_response(tokens)
        openai = renderer.to_openai_message(message)
        content = openai.get("content") or ""
        if not isinstance(content, str):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return content, openai.get("reasoning_content") or None
    except Exception:  # the model's text, as written, when the renderer cannot parse it
        stops = {x for x in renderer.get_stop_sequences() if isinstance(x, int)}
        kept = tokens[:-1] if tokens and tokens[-1] in stops else tokens
        return renderer.tokenizer.decode(kept, skip_special_tokens=False), None


def _completion(policy: Policy, body: dict[str, Any]) -> dict[str, Any]:
    if body.get("stream"):
        raise HTTPException(400, "streaming is not served: the exact sample is returned whole")
    renderer = policy.local_renderer()
    prompt = renderer.build_generation_prompt(_messages(body))
    seed = body.get("seed")
    params = tinker.SamplingParams(
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        max_tokens=_max_tokens(body),
        temperature=float(body.get("temperature", 1.0)),
        top_p=float(body.get("top_p", 1.0)),
        top_k=int(body.get("top_k", -1)),
        stop=renderer.get_stop_sequences(),
    )
    with policy.lock:  # never sample from a sampler that a training step is replacing
        sampler, name = policy.sampler, policy.sampler_name
    try:
        result = sampler.sample(prompt=prompt, num_samples=1, sampling_params=params).result()
    except Exception as exc:
        raise HTTPException(502, f"Tinker sampling failed: {exc}") from None
    sequence = result.sequences[0]
    tokens = [int(t) for t in sequence.tokens]
    logprobs = [float(x) for x in (sequence.logprobs or [])]
    if len(logprobs) != len(tokens):
        raise HTTPException(502, "Tinker returned no logprob for every sampled token")
    content, reasoning = _text(renderer, tokens)
    pieces = [renderer.tokenizer.decode([t]) for t in tokens]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    prompt_tokens = prompt.to_ints()
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or policy.args.served_model_name),
        "system_fingerprint": name,
        "prompt_token_ids": prompt_tokens,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "length" if str(sequence.stop_reason) == "length" else "stop",
                "token_ids": tokens,
                "logprobs": {
                    "content": [
                        {"token": piece, "logprob": lp, "top_logprobs": []}
                        for piece, lp in zip(pieces, logprobs, strict=True)
                    ]
                },
            }
        ],
        "usage": {
            "prompt_tokens": len(prompt_tokens),
            "completion_tokens": len(tokens),
            "total_tokens": len(prompt_tokens) + len(tokens),
        },
    }


def _sequence_logprobs(sampler: Any, prompt: list[int], completion: list[int]) -> list[float]:
    """Per-token logprobs of `completion` after `prompt` under `sampler`."""
    values = sampler.compute_logprobs(tinker.ModelInput.from_ints(prompt + completion)).result()
    # Hosted Tinker answers one value per token (None for the first), SkyRL tx one per
    # predicted token: the completion's are the last ones either way.
    tail = list(values)[-len(completion) :] if len(values) >= len(completion) else []
    if len(tail) != len(completion) or any(v is None for v in tail):
        raise HTTPException(502, "Tinker returned no logprob for every completion token")
    return [float(v) for v in tail]


def _datum(
    prompt: list[int], completion: list[int], logprobs: list[float], advantages: list[float]
) -> Any:
    """The reference's datum: prompt targets carry advantage 0 and logprob 0."""
    tokens = prompt + completion
    pad = [0.0] * (len(prompt) - 1)
    return tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(
                data=tokens[1:], dtype="int64", shape=[len(tokens) - 1]
            ),
            "logprobs": tinker.TensorData(
                data=pad + logprobs, dtype="float32", shape=[len(tokens) - 1]
            ),
            "advantages": tinker.TensorData(
                data=pad + advantages, dtype="float32", shape=[len(tokens) - 1]
            ),
        },
    )


def _check_datum(i: int, raw: Any) -> tuple[list[int], list[int], list[float], float]:
    try:
        prompt = [int(t) for t in raw["prompt_tokens"]]
        completion = [int(t) for t in raw["completion_tokens"]]
        logprobs = [float(x) for x in raw["logprobs"]]
        advantage = float(raw["advantage"])
    except (KeyError, TypeError, ValueError):
        raise HTTPException(
            400, f"datums[{i}] needs prompt_tokens, completion_tokens, logprobs and advantage"
        ) from None
    if (
        not prompt
        or not completion
        or len(logprobs) != len(completion)
        or not math.isfinite(advantage)
    ):
        raise HTTPException(
            400,
            f"datums[{i}]: a prompt, a completion, a logprob per completion token, a finite advantage",
        )
    return prompt, completion, logprobs, advantage


def _train(policy: Policy, body: dict[str, Any]) -> dict[str, Any]:
    step = int(body["step"])
    name = str(body["name"])
    rows = [_check_datum(i, raw) for i, raw in enumerate(body.get("datums") or [])]
    kl_coef = float(body.get("kl_coef", 0.0))
    learning_rate = float(body["learning_rate"])
    per_sequence_mean = bool(body.get("per_sequence_mean", False))
    with policy.lock:
        if step < policy.trained_steps:
            raise HTTPException(
                409, f"step {step} is already in the weights ({policy.trained_steps} steps trained)"
            )
        if step != policy.trained_steps:
            raise HTTPException(
                409, f"step {step} cannot follow {policy.trained_steps} trained steps"
            )
        seconds: dict[str, float] = {}
        metrics: dict[str, Any] = {"datums": len(rows), "updated": False}
        started = time.monotonic()
        per_token = [[adv] * len(completion) for _, completion, _, adv in rows]
        if rows and kl_coef > 0:
            base = policy.base_sampler()
            base_lp = [_sequence_logprobs(base, p, c) for p, c, _, _ in rows]
            per_token, mean = kl_shaped(per_token, [lp for _, _, lp, _ in rows], base_lp, kl_coef)
            metrics["kl_policy_base"] = mean
            seconds["kl"] = time.monotonic() - started
        if rows:
            data = []
            for (prompt, completion, logprobs, _), advantages in zip(rows, per_token, strict=True):
                if per_sequence_mean:
                    # The server divides each sequence's loss by its target count and the batch's
                    # gradient by the number of sequences; undo both so the loss is the sum.
                    scale = float(len(prompt) + len(completion) - 1) * len(rows)
                    advantages = [a * scale for a in advantages]
                data.append(_datum(prompt, completion, logprobs, advantages))
            tick = time.monotonic()
            result = policy.trainer.forward_backward(data, loss_fn="importance_sampling").result()
            seconds["forward_backward"] = time.monotonic() - tick
            loss = _loss(result, per_token, rows)
            metrics.update(loss)
            tick = time.monotonic()
            policy.trainer.optim_step(
                tinker.AdamParams(
                    learning_rate=learning_rate,
                    beta1=ADAM_BETAS[0],
                    beta2=ADAM_BETAS[1],
                    eps=ADAM_EPS,
                )
            ).result()
            seconds["optim_step"] = time.monotonic() - tick
            metrics["updated"] = True
        _failpoint("policy-after-optim-step", step)  # where it is, or would be
        tick = time.monotonic()
        state_path = policy.trainer.save_state(name).result().path
        sampler_path = policy.trainer.save_weights_for_sampler(name).result().path
        _failpoint("policy-after-save", step)
        sampler = policy.trainer.create_sampling_client(sampler_path)
        seconds["save"] = time.monotonic() - tick
        policy.sampler, policy.sampler_name = sampler, sampler_path
        policy.trained_steps = step + 1
        seconds["total"] = time.monotonic() - started
    return {
        "step": step,
        "trained_steps": policy.trained_steps,
        "state_path": state_path,
        "sampler_path": sampler_path,
        "metrics": metrics,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }


def _loss(result: Any, per_token: list[list[float]], rows: list[Any]) -> dict[str, float]:
    """The importance-sampling loss −Σ ratio·A recomputed from the trainer's own logprobs."""
    loss = 0.0
    ratio_gap = 0.0
    count = 0
    for output, advantages, (prompt, _, sampled, _) in zip(
        result.loss_fn_outputs, per_token, rows, strict=True
    ):
        trained = [float(x) for x in output["logprobs"].data][len(prompt) - 1 :]
        for lp, sp, a in zip(trained, sampled, advantages, strict=True):
            loss -= math.exp(lp - sp) * a
            ratio_gap += abs(lp - sp)
            count += 1
    return {"loss": loss, "kl_sample_train": ratio_gap / count if count else 0.0}


def build_app(policy: Policy) -> FastAPI:
    app = FastAPI(title="atoll guidance policy on Tinker")
    key = os.environ.get("ATOLL_SERVE_API_KEY") or None

    def guard(request: Request) -> None:
        if key is not None and request.headers.get("authorization") != f"Bearer {key}":
            raise HTTPException(401, "a valid bearer token is required")

    @app.exception_handler(HTTPException)
    async def error(_: Request, exc: HTTPException) -> JSONResponse:
        kind = "upstream_error" if exc.status_code >= 500 else "invalid_request_error"
        body = {"error": {"message": str(exc.detail), "type": kind, "param": None, "code": None}}
        return JSONResponse(body, status_code=exc.status_code)

    @app.get("/v1/models")
    def models(request: Request) -> dict[str, Any]:
        guard(request)
        return {
            "object": "list",
            "data": [{"id": policy.args.served_model_name, "object": "model"}],
        }

    @app.post("/v1/chat/completions")
    def chat(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        guard(request)
        return _completion(policy, body)

    @app.post("/atoll/train")
    def train(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        guard(request)
        return _train(policy, body)

    @app.post("/atoll/logprobs")
    def logprobs(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        guard(request)
        with policy.lock:
            sampler, name = policy.sampler, policy.sampler_name
        sums = []
        for i, raw in enumerate(body.get("sequences") or []):
            prompt, completion, _, _ = _check_datum(
                i,
                {
                    **raw,
                    "logprobs": [0.0] * len(raw.get("completion_tokens") or []),
                    "advantage": 0,
                },
            )
            sums.append(math.fsum(_sequence_logprobs(sampler, prompt, completion)))
        return {"sampler": name, "sums": sums}

    @app.get("/atoll/status")
    def status(request: Request) -> dict[str, Any]:
        guard(request)
        return {
            "trained_steps": policy.trained_steps,
            "sampler": policy.sampler_name,
            "base_model": policy.args.base_model,
            "renderer": policy.args.renderer,
        }

    return app


def _exit_with_parent(parent: int) -> None:
    """End this server once the run that started it is gone (killed, it could not stop us).

    The run starts the server in a process group of its own; a SIGKILL of
    the run would otherwise leave it holding the run's port, and the resumed
    run could not start its own.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser(description="Guidance-TTT's policy on Tinker (atoll)")
    parser.add_argument("--base-model", required=True)
    parser.add_argument("--renderer", required=True)
    parser.add_argument("--tinker-url", required=True)
    parser.add_argument("--lora-rank", type=int, required=True)
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--resume-state", default=None, help="training state (with optimizer) to resume"
    )
    parser.add_argument(
        "--load-weights", default=None, help="training state whose weights start the LoRA"
    )
    parser.add_argument("--trained-steps", type=int, default=0)
    parser.add_argument("--sampler-name", default=None)
    args = parser.parse_args()
    _exit_with_parent(os.getppid())
    policy = Policy(args)
    uvicorn.run(build_app(policy), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
