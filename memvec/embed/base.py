"""One interface for every embedding model: documents and queries go through the same object."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memvec.errors import InvalidInputError

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalized float32 vectors of a fixed dimension.

    ``model_id`` names the model stably across machines; it is recorded with every stored
    embedding and every index manifest, so a different model is detected instead of mixed in.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors: ...

    def embed_query(self, text: str) -> Vectors: ...


def embed_records(
    embedder: Embedder, texts: Sequence[str], contexts: Sequence[str | None], *, windows: bool = True
) -> Vectors:
    """A record's vector: its own text, plus (when it has a context, e.g. the previous message) the
    text read in that context, summed and normalized. Measured on LoCoMo conversations, the
    contextual half lets a short reply ("yes, last Friday!") be found by what it answers, while the
    plain half keeps the turn itself ranked first. With `windows`, a text longer than the model's
    window is read past the window's end too (see long_text_windows)."""
    pieces, owners, weights = long_text_windows(embedder, texts) if windows else (list(texts), None, None)
    with_context = [i for i, c in enumerate(contexts) if c]
    # one call for every piece: the backend sorts all of them by length into batches together
    both = embedder.embed_documents([*pieces, *(f"{contexts[i]}\n{texts[i]}" for i in with_context)])
    own = both[: len(pieces)]
    if owners is not None and weights is not None:
        own = _pooled(own, owners, weights, len(texts))
    if not with_context:
        return own
    combined = own.copy()
    combined[with_context] += both[len(pieces) :]
    return l2_normalize(combined)


Owners = npt.NDArray[np.int64]
# How much the text past a record's first window adds to its vector, per window's worth of tokens.
# The first window leads: a title and an opening say most of what a record is about, and an even
# average over the windows ranked SciFact's abstracts worse than a quarter weight did
# (docs/benchmarks.md, "Long records").
TAIL_WEIGHT = 0.25


def long_text_windows(embedder: Embedder, texts: Sequence[str]) -> tuple[list[str], Owners | None, Vectors | None]:
    """The pieces to embed for `texts`: each text itself (the model reads its first window), and for
    a text longer than the window the rest of it, cut at token boundaries into the fewest windows of
    equal size that fit. Returns the pieces, the text each belongs to and its weight in the text's
    vector (None, None: every text is one piece). An embedder without a tokenizer reads each text as
    it always did."""
    found = tokenizer_of(embedder)
    if found is None:
        return list(texts), None, None
    spans_of, window = found
    longer = [i for i, text in enumerate(texts) if len(text) > window]  # a token spans a character or more
    spans = dict(zip(longer, spans_of([texts[i] for i in longer]) if longer else [], strict=True))
    if all(len(tokens) <= window for tokens in spans.values()):
        return list(texts), None, None
    pieces: list[tuple[int, str, float]] = []
    for i, text in enumerate(texts):
        pieces.append((i, text, 1.0))
        rest = spans.get(i, [])[window:]
        if rest:
            size = -(-len(rest) // -(-len(rest) // window))  # equal windows: no short tail read alone
            parts = [rest[start : start + size] for start in range(0, len(rest), size)]
            pieces += [(i, text[part[0][0] : part[-1][1]], TAIL_WEIGHT * len(part) / window) for part in parts]
    owners = np.asarray([owner for owner, _, _ in pieces], dtype=np.int64)
    weights = np.asarray([weight for _, _, weight in pieces], dtype=np.float32)
    return [piece for _, piece, _ in pieces], owners, weights


def _pooled(vectors: Vectors, owners: Owners, weights: Vectors, count: int) -> Vectors:
    """Each text's pieces summed by their weights and normalized; a text of one piece keeps its
    vector exactly as the model gave it."""
    out = np.zeros((count, vectors.shape[1]), dtype=np.float32)
    np.add.at(out, owners, vectors * weights[:, None])
    several = np.bincount(owners, minlength=count) > 1
    out[several] = l2_normalize(out[several])
    single = np.flatnonzero(~several)
    out[single] = vectors[np.searchsorted(owners, single)]
    return out


def batch_invariant(embedder: Embedder) -> bool:
    """Whether the embedder gives a text the same vector whatever else is in its batch (an embedder
    that does not say so is taken to; int8 ONNX does not: see OnnxEmbedder.batch_invariant)."""
    return bool(getattr(embedder, "batch_invariant", True))


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Several queries in one call where the backend can (one forward pass for all), else one by one."""
    batch = getattr(embedder, "embed_queries", None)
    if batch is not None:
        result: Vectors = batch(texts)
        return result
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([embedder.embed_query(t) for t in texts])


Spans = list[list[tuple[int, int]]]
FALLBACK_WINDOW = 200  # words per chunk for an embedder that has no tokenizer (the test embedders)


def tokenizer_of(embedder: Embedder) -> tuple[Callable[[Sequence[str]], Spans], int] | None:
    """The model's own tokens as character spans of each text (special tokens left out, nothing
    truncated), and how many of them its window holds beside its special tokens; None for an
    embedder without a tokenizer."""
    window = getattr(embedder, "max_tokens", None)
    spans = getattr(embedder, "token_spans", None)
    if window is None or spans is None:
        return None
    return spans, int(window)


def l2_normalize(matrix: npt.NDArray[np.floating]) -> Vectors:
    out = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = out / norms
    return result


def checked_vectors(vectors: npt.NDArray[np.floating], rows: int, dim: int) -> Vectors:
    """Vectors that come from outside the embedder (an import, a caller), made safe to index: the
    shape must be (rows, dim) and every value finite with a non-zero norm, and each row is
    re-normalized, so a crafted vector can neither poison scores with NaN nor outrank every
    genuine one by its length. Raises InvalidInputError."""
    array = np.asarray(vectors)
    if array.shape != (rows, dim):
        raise InvalidInputError(f"expected vectors of shape ({rows}, {dim}), got {array.shape}")
    array = array.astype(np.float64)
    bad = ~np.isfinite(array).all(axis=1)
    scale = np.abs(np.where(bad[:, None], 0.0, array)).max(axis=1, initial=0.0)
    bad |= scale == 0
    if bad.any():
        raise InvalidInputError(
            f"{int(bad.sum())} vector(s) are not finite or are all zeros (first at row {int(np.argmax(bad))})"
        )
    return l2_normalize(array / scale[:, None])  # scaled first, so squaring 1e300 cannot overflow


class ForwardsTokenizer:
    """For an embedder that wraps another: the wrapped one's tokenizer (see tokenizer_of), if any."""

    def wrapped_embedder(self) -> Embedder:
        raise NotImplementedError

    @property
    def max_tokens(self) -> int | None:
        found = tokenizer_of(self.wrapped_embedder())
        return None if found is None else found[1]

    def token_spans(self, texts: Sequence[str]) -> Spans:
        found = tokenizer_of(self.wrapped_embedder())
        if found is None:
            raise TypeError(f"{self.wrapped_embedder().model_id} has no tokenizer")
        return found[0](texts)


class LazyEmbedder(ForwardsTokenizer):
    """Defers loading a model until it is first needed, so commands that only read the store
    (stats, verify, list) start in milliseconds. ``model_id`` is known without loading."""

    def __init__(self, model_id: str, load: Callable[[], Embedder]) -> None:
        self._model_id = model_id
        self._load = load
        self._loaded: Embedder | None = None

    @property
    def loaded(self) -> Embedder:
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self.loaded.dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.loaded.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.loaded.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return embed_queries(self.loaded, texts)

    @property
    def batch_invariant(self) -> bool:
        return batch_invariant(self.loaded)

    def wrapped_embedder(self) -> Embedder:
        return self.loaded
