"""Whether litellm can call a model name, checked when an agent is created or changed, so that a typo
(`gpt4o-mini`) is a clear 400 at once and not a 502 at the first message.

litellm knows each hosted provider's models (its bundled map, read offline). A name is refused when
litellm cannot tell its provider, or when the provider lists its models and the name is not among
them. Anything goes where the model list is yours: a provider whose models you name or serve
(USER_NAMED: Azure deployments, Ollama, vLLM, LM Studio, ...), a provider litellm lists no models
for (OpenRouter, custom providers registered with litellm), a provider whose
`<PROVIDER>_API_BASE` points at your own server (an OpenAI-compatible llama.cpp or vLLM as
`openai/<name>`), or every provider with MEMVEC_ALLOW_UNLISTED_MODELS=1 (a model newer than the
installed litellm's map).
"""

from __future__ import annotations

import os
from difflib import get_close_matches

from memvec.agent.llm import litellm_module

ALLOW_UNLISTED = "MEMVEC_ALLOW_UNLISTED_MODELS"
# providers whose model names are the user's own: a deployment's or a local server's
USER_NAMED = frozenset(
    {
        "azure",
        "azure_ai",
        "azure_text",
        "ollama",
        "ollama_chat",
        "hosted_vllm",
        "vllm",
        "lm_studio",
        "llamafile",
        "custom_openai",
        "openai_like",
        "xinference",
        "lemonade",
        "huggingface",
        "sagemaker",
        "databricks",
    }
)


def model_problem(model: str) -> str | None:
    """Why litellm could not call `model` (None: it can, as far as can be told without calling it)."""
    if os.environ.get(ALLOW_UNLISTED, "").strip().lower() in {"1", "true", "yes"}:
        return None
    litellm = litellm_module()
    try:
        name, provider = litellm.get_llm_provider(model)[:2]
    except Exception:  # litellm's BadRequestError: no provider it knows
        return (
            f"litellm cannot tell the provider of model {model!r}: write it as provider/model "
            "(e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, ollama/llama3)"
        )
    listed = set(litellm.models_by_provider.get(provider, ()))
    if (
        provider in USER_NAMED
        or not listed
        or name in listed
        or f"{provider}/{name}" in listed
        or _own_server(provider)
    ):
        return None
    close = get_close_matches(name, sorted(listed), n=3, cutoff=0.75)
    hint = f"; did you mean {', '.join(f'{provider}/{c}' for c in close)}?" if close else ""
    return (
        f"litellm does not know model {name!r} of provider {provider!r}{hint} (a model newer than "
        f"this litellm: set {ALLOW_UNLISTED}=1; your own server: set {provider.upper()}_API_BASE)"
    )


def _own_server(provider: str) -> bool:
    return bool(os.environ.get(f"{provider.upper()}_API_BASE") or os.environ.get(f"{provider.upper()}_BASE_URL"))


def known_context_window(model: str) -> int | None:
    """The input window litellm's bundled map gives the model (None: a model it does not map)."""
    try:
        info = litellm_module().get_model_info(model)
    except Exception:  # litellm raises its own errors for a model it does not map
        return None
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if isinstance(window, int) and window > 0 else None
