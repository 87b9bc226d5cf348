"""Embedding models behind one interface, chosen by model id.

A model id names the model and the backend that computes its vectors, so vectors from different
backends are never mixed silently:

- ``onnx-int8:<name>``: ONNX Runtime, int8 (the default for a new home), ``onnx:<name>``: ONNX fp32;
  a model whose int8 vectors disagree with its fp32 ones at export is embedded in fp32 instead, with
  a warning, and its embedder's ``model_id`` says ``onnx:<name>``;
- ``<name>`` (or ``torch:<name>``): sentence-transformers on torch, the reference, and what homes
  made before the ONNX backend recorded;
- ``hash:<dim>``: the deterministic hashing embedder for tests (no backend).

``<name>`` is a sentence-transformers name or path (default: the packaged all-MiniLM-L6-v2). Extra
backends can be registered by prefix with :func:`register_embedder`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from memvec.embed.base import Embedder, l2_normalize
from memvec.embed.hashing import HashingEmbedder
from memvec.errors import InvalidInputError, QuantizationRefusedError

Backend = Literal["torch", "onnx", "onnx-int8"]
BACKENDS: tuple[Backend, ...] = ("torch", "onnx", "onnx-int8")
DEFAULT_BACKEND: Backend = "onnx-int8"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

log = logging.getLogger("memvec.embed")

EmbedderFactory = Callable[[str, int | None], Embedder]
_FACTORIES: dict[str, EmbedderFactory] = {}


def register_embedder(prefix: str, factory: EmbedderFactory) -> None:
    """Make ``load_embedder("<prefix>:<rest>")`` call ``factory("<rest>", batch_size)``."""
    _FACTORIES[prefix] = factory


def _hashing(spec: str, _batch_size: int | None) -> Embedder:
    try:
        return HashingEmbedder(int(spec or 64))
    except ValueError as exc:
        raise InvalidInputError(f"bad hashing model spec {spec!r}: {exc}") from exc


def _torch(name: str, batch_size: int | None) -> Embedder:
    from memvec.embed.sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(name, batch_size=batch_size or 64)


def _onnx(quantization: Literal["none", "int8"]) -> EmbedderFactory:
    def load(name: str, batch_size: int | None) -> Embedder:
        from memvec.embed.locate import local_model_dir
        from memvec.embed.onnx import DEFAULT_ONNX_BATCH, OnnxEmbedder

        try:
            return OnnxEmbedder(
                name, local_model_dir(name), quantization=quantization, batch_size=batch_size or DEFAULT_ONNX_BATCH
            )
        except QuantizationRefusedError as exc:  # the fp32 graph, under its own id: a home records the truth
            log.warning("%s; embedding with onnx:%s instead", exc, name)
            return OnnxEmbedder(
                name, local_model_dir(name), quantization="none", batch_size=batch_size or DEFAULT_ONNX_BATCH
            )

    return load


register_embedder("hash", _hashing)
register_embedder("torch", _torch)
register_embedder("onnx", _onnx("none"))
register_embedder("onnx-int8", _onnx("int8"))


def split_model_id(model_id: str) -> tuple[Backend | None, str]:
    """(explicit backend or None, the rest); ``hash:64`` and other registered prefixes stay whole."""
    prefix, sep, rest = model_id.partition(":")
    if sep and prefix in BACKENDS:
        return prefix, rest
    return None, model_id


def has_backend(model_id: str) -> bool:
    """False for ids of embedders without a backend choice (``hash:<dim>``, other registered prefixes)."""
    prefix, sep, _ = model_id.partition(":")
    return not sep or prefix in BACKENDS or prefix not in _FACTORIES


def backend_of(model_id: str) -> Backend | None:
    if not has_backend(model_id):
        return None
    return split_model_id(model_id)[0] or "torch"


def qualified_model_id(name: str, backend: Backend | None, *, fallback: Backend | None = None) -> str:
    """The canonical model id of ``name`` computed by ``backend`` (else ``name``'s own prefix, else
    ``fallback``, else the default backend). Torch ids are the plain name, as homes always recorded."""
    if not has_backend(name):
        return name
    explicit, base = split_model_id(name)
    if explicit and backend and explicit != backend:
        raise InvalidInputError(f"model {name!r} names backend {explicit!r} but {backend!r} was asked for")
    chosen = explicit or backend or fallback or DEFAULT_BACKEND
    return base if chosen == "torch" else f"{chosen}:{base}"


def load_embedder(model_id: str | None = None, *, batch_size: int | None = None) -> Embedder:
    model_id = model_id or qualified_model_id(DEFAULT_MODEL_NAME, None)
    prefix, sep, rest = model_id.partition(":")
    if sep and prefix in _FACTORIES:
        return _FACTORIES[prefix](rest, batch_size)
    return _torch(model_id, batch_size)


__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "Backend",
    "Embedder",
    "HashingEmbedder",
    "backend_of",
    "l2_normalize",
    "load_embedder",
    "qualified_model_id",
    "register_embedder",
    "split_model_id",
]
