"""A deterministic embedder with no model: signed feature hashing of word uni- and bigrams.

It is not semantic. It exists so unit tests and offline smoke checks run in milliseconds with the
same code path as a real model (select it with the model name ``hash:<dim>``, e.g. ``hash:64``).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memvec.embed.base import Vectors, l2_normalize

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    def __init__(self, dim: int = 64) -> None:
        if not 8 <= dim <= 4096:
            raise ValueError("hashing embedder dim must be within 8..4096")
        self._dim = dim

    @property
    def model_id(self) -> str:
        return f"hash:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self._dim, dtype=np.float32)
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vec[value % self._dim] += 1.0 if (value >> 63) & 1 else -1.0
        return vec

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return l2_normalize(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> Vectors:
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector
