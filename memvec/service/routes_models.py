"""`GET /v1/models` and `/v1/models/embedding`: the models this home is configured for, in Letta's
shapes. memvec calls whatever litellm model an agent names (checked when it is set), so the language
models listed are the ones the caller's agents use; the embedding model is the home's one."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memvec.service.deps import Caller, Service, api_router, visible_settings
from memvec.service.views import endpoint_type

router = api_router()


class ModelOut(BaseModel):
    """Letta's Model (its LLMConfig fields), as far as memvec knows it."""

    handle: str = Field(description="the litellm model, provider/model")
    name: str = Field(description="the handle again (Letta's display name of the model)")
    model: str
    model_endpoint_type: str
    provider_type: str
    context_window: int = Field(description="the largest context window an agent using it has")
    max_context_window: int


def _model_out(handle: str, window: int) -> ModelOut:
    provider = endpoint_type(handle)
    return ModelOut(
        handle=handle,
        name=handle,
        model=handle.partition("/")[2] or handle,
        model_endpoint_type=provider,
        provider_type=provider,
        context_window=window,
        max_context_window=window,
    )


class EmbeddingModelOut(BaseModel):
    """Letta's EmbeddingConfig for the home's model (every passage of every agent is embedded with it)."""

    handle: str
    name: str
    display_name: str
    embedding_model: str
    embedding_endpoint_type: str = "hugging-face"
    provider_type: str = "hugging-face"
    provider_name: str = "memvec"
    embedding_dim: int


@router.get("/v1/models", response_model=list[ModelOut], tags=["models"])
def list_models(principal: Caller, service: Service) -> list[ModelOut]:
    """The language models of the agents the caller can see, each once, by handle."""
    windows: dict[str, int] = {}
    for settings in visible_settings(principal, service):
        if settings.model:
            windows[settings.model] = max(windows.get(settings.model, 0), settings.context_window)
    return [_model_out(handle, window) for handle, window in sorted(windows.items())]


@router.get("/v1/models/embedding", response_model=list[EmbeddingModelOut], tags=["models"])
def list_embedding_models(principal: Caller, service: Service) -> list[EmbeddingModelOut]:
    memory = service.memory
    model = memory.model_id
    return [
        EmbeddingModelOut(
            handle=model, name=model, display_name=model, embedding_model=model, embedding_dim=memory.embedding_dim
        )
    ]
