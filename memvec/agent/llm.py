"""The only door to litellm. It is imported lazily, and told to use its bundled model-cost map
first: otherwise importing it fetches a remote map (retries, warnings, seconds lost offline).
The model's address and key come from litellm's usual settings (e.g. OPENAI_API_BASE), so a
local OpenAI-compatible server (Ollama, llama.cpp) works unchanged.
"""

from __future__ import annotations

import os
from typing import Any

from memvec.errors import ModelCallError

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def litellm_module() -> Any:
    import litellm

    return litellm


DEFAULT_TIMEOUT_S = 120.0


def complete(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
             timeout: float = DEFAULT_TIMEOUT_S) -> Any:
    """One chat completion; returns litellm's message object (content and tool_calls). `timeout`:
    seconds the provider may take (litellm's own default is 10 minutes: a stuck provider would hold
    the agent's lease that long)."""
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "timeout": timeout}
    if tools:
        kwargs["tools"] = tools
        kwargs["tool_choice"] = "auto"
    try:
        response = litellm_module().completion(**kwargs)
        return response.choices[0].message
    except Exception as exc:  # litellm raises per-provider types; callers need one
        kind = type(exc).__name__
        raise ModelCallError(f"model {model!r} failed: {kind}: {exc}",
                             public=f"model {model!r} failed: {kind} (details in the server's log)") from exc


def count_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """Tokens of `messages` with the tokenizer litellm knows for `model` (its default otherwise)."""
    return int(litellm_module().token_counter(model=model, messages=messages))
