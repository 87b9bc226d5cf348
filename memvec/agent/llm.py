"""The only door to litellm. It is imported lazily, and told to use its bundled model-cost map
first: otherwise importing it fetches a remote map (retries, warnings, seconds lost offline).
The model's address and key come from litellm's usual settings (e.g. OPENAI_API_BASE), so a
local OpenAI-compatible server (Ollama, llama.cpp) works unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from memvec.errors import ModelCallError
from memvec.telemetry.metrics import LLM_CALLS, LLM_TOKENS
from memvec.telemetry.tracing import span

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def litellm_module() -> Any:
    import litellm

    # litellm prints hints ("Provider List: ...") to stdout, e.g. while assembling a stream of a
    # provider it cannot price; stdout is the protocol of `memvec mcp` and the output of the CLI
    litellm.suppress_debug_info = True
    return litellm


DEFAULT_TIMEOUT_S = 120.0


Delta = Any  # litellm's streamed delta: `content` and `tool_calls` (each with `index` and partial `function`)


def complete(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    on_delta: Callable[[Delta], None] | None = None,
    on_usage: Callable[[int, int], None] | None = None,
    response_format: dict[str, Any] | None = None,
) -> Any:
    """One chat completion; returns litellm's message object (content and tool_calls). `timeout`:
    seconds the provider may take (litellm's own default is 10 minutes: a stuck provider would hold
    the agent's lease that long). With `on_delta` the provider streams: each delta is handed on as it
    comes, and the message is assembled from them by litellm (tool calls included). `on_usage` is told
    the call's prompt and completion tokens as the provider counted them (0 where it did not).
    `response_format`: the shape the text answer must have (OpenAI's, e.g. a `json_schema`), as given."""
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "timeout": timeout}
    if response_format:
        kwargs["response_format"] = response_format
    if tools:
        kwargs["tools"] = tools
        kwargs["tool_choice"] = "auto"
    try:
        with span("memvec.llm.completion", **{"gen_ai.request.model": model, "memvec.streamed": on_delta is not None}):
            if on_delta is not None:
                response = _streamed(kwargs, messages, on_delta)
            else:
                response = litellm_module().completion(**kwargs)
        usage = getattr(response, "usage", None)
        prompt, completion = (int(getattr(usage, name, 0) or 0) for name in ("prompt_tokens", "completion_tokens"))
        LLM_CALLS.labels("ok").inc()
        LLM_TOKENS.labels("prompt").inc(prompt)
        LLM_TOKENS.labels("completion").inc(completion)
        if on_usage is not None:
            on_usage(prompt, completion)
        return response.choices[0].message
    except Exception as exc:  # litellm raises per-provider types; callers need one
        LLM_CALLS.labels("error").inc()
        kind = type(exc).__name__
        raise ModelCallError(
            f"model {model!r} failed: {kind}: {exc}",
            public=f"model {model!r} failed: {kind} (details in the server's log)",
        ) from exc


def _streamed(kwargs: dict[str, Any], messages: list[dict[str, Any]], on_delta: Callable[[Delta], None]) -> Any:
    litellm = litellm_module()
    chunks = []
    for chunk in litellm.completion(**kwargs, stream=True, stream_options={"include_usage": True}):
        chunks.append(chunk)
        if chunk.choices:
            on_delta(chunk.choices[0].delta)
    return litellm.stream_chunk_builder(chunks, messages=messages)


def count_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """Tokens of `messages` with the tokenizer litellm knows for `model` (its default otherwise)."""
    return int(litellm_module().token_counter(model=model, messages=messages))
