"""Embedding models behind one interface, chosen by name.

``load_embedder(name)``: ``hash:<dim>`` gives the deterministic hashing embedder; any other name
is a sentence-transformers model name or path (default: the packaged all-MiniLM-L6-v2).
Extra backends can be registered by prefix with :func:`register_embedder`.
"""

from __future__ import annotations

from collections.abc import Callable

from memvec.config import DEFAULT_MODEL
from memvec.embed.base import Embedder, l2_normalize
from memvec.embed.hashing import HashingEmbedder
from memvec.errors import InvalidInputError

EmbedderFactory = Callable[[str, int], Embedder]
_FACTORIES: dict[str, EmbedderFactory] = {}


def register_embedder(prefix: str, factory: EmbedderFactory) -> None:
    """Make ``load_embedder("<prefix>:<rest>")`` call ``factory("<rest>", batch_size)``."""
    _FACTORIES[prefix] = factory


def _hashing(spec: str, _batch_size: int) -> Embedder:
    try:
        return HashingEmbedder(int(spec or 64))
    except ValueError as exc:
        raise InvalidInputError(f"bad hashing model spec {spec!r}: {exc}") from exc


register_embedder("hash", _hashing)


def load_embedder(name: str | None = None, *, batch_size: int = 64) -> Embedder:
    name = name or DEFAULT_MODEL
    prefix, sep, rest = name.partition(":")
    if sep and prefix in _FACTORIES:
        return _FACTORIES[prefix](rest, batch_size)
    from memvec.embed.sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(name, batch_size=batch_size)


__all__ = ["Embedder", "HashingEmbedder", "l2_normalize", "load_embedder", "register_embedder"]
