"""The torch backend: sentence-transformers models, loaded offline (``HF_HUB_OFFLINE=1``).

It is the reference the ONNX backend is checked against, and the one for models that cannot be
exported. Its model ids are the plain model names (``all-MiniLM-L6-v2``, a path, a hub name already
in the Hugging Face cache), as in homes made before the ONNX backend existed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memvec.embed.base import Vectors
from memvec.embed.locate import resolve_model_location
from memvec.embed.threads import thread_count
from memvec.errors import InvalidInputError
from memvec.telemetry.metrics import EMBED_BATCH


class SentenceTransformerEmbedder:
    def __init__(self, name: str, *, batch_size: int = 64, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(thread_count())

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

    @property
    def max_tokens(self) -> int | None:
        tokenizer: Any = getattr(self._model, "tokenizer", None)
        if not getattr(tokenizer, "is_fast", False):
            return None  # no character offsets to cut at
        return int(self._model.max_seq_length) - int(tokenizer.num_special_tokens_to_add(pair=False))

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        encoded = self._model.tokenizer(
            list(texts), add_special_tokens=False, return_offsets_mapping=True, truncation=False, verbose=False
        )
        return [[(int(a), int(b)) for a, b in offsets if b > a] for offsets in encoded["offset_mapping"]]

    def _encode(self, method: str, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        # One forward pass at a time: torch on 2 cores gains nothing from concurrent encodes.
        for start in range(0, len(texts), self._batch_size):
            EMBED_BATCH.observe(min(self._batch_size, len(texts) - start))
        with self._lock:
            vectors = getattr(self._model, method)(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._encode("encode_document", texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._encode("encode_query", texts)

    def embed_query(self, text: str) -> Vectors:
        vector: npt.NDArray[np.float32] = self._encode("encode_query", [text])[0]
        return vector
