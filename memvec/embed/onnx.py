"""The ONNX Runtime backend: a sentence-transformers model exported once (see
:mod:`memvec.embed.onnx_export`), run without torch.

Model ids: ``onnx:<name>`` (fp32) and ``onnx-int8:<name>`` (dynamically quantized), where ``<name>``
is any sentence-transformers name or path the torch backend accepts. Texts are tokenized with the
model's own fast tokenizer, truncated at its max sequence length, sorted by length so a batch pads
little, and pooled as the model's pooling config declares.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memvec.embed.base import Vectors, l2_normalize
from memvec.embed.onnx_export import MODEL_FILE, TOKENIZER_FILE, Quantization, exported_model
from memvec.embed.threads import thread_count
from memvec.telemetry.metrics import EMBED_BATCH

DEFAULT_ONNX_BATCH = 16  # measured on 2 cores with LoCoMo turns: 8-32 within 5%, 64+ slower


def pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], modes: Sequence[str]) -> Vectors:
    """sentence-transformers' pooling modes over right-padded token embeddings, concatenated."""
    weights = mask[..., None].astype(np.float32)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    parts = []
    for mode in modes:
        if mode == "cls":
            parts.append(hidden[:, 0])
        elif mode == "max":
            parts.append(np.where(weights > 0, hidden, -1e9).max(axis=1))
        elif mode == "mean":
            parts.append((hidden * weights).sum(axis=1) / counts)
        elif mode == "mean_sqrt_len":
            parts.append((hidden * weights).sum(axis=1) / np.sqrt(counts))
        elif mode == "weightedmean":
            positions = weights * np.arange(1, hidden.shape[1] + 1, dtype=np.float32)[None, :, None]
            parts.append((hidden * positions).sum(axis=1) / np.maximum(positions.sum(axis=1), 1e-9))
        elif mode == "lasttoken":
            parts.append(hidden[np.arange(len(hidden)), mask.sum(axis=1) - 1])
        else:
            raise ValueError(f"unknown pooling mode {mode!r}")
    return np.concatenate(parts, axis=1).astype(np.float32)


class OnnxEmbedder:
    def __init__(
        self,
        name: str,
        model_dir: Path,
        *,
        quantization: Quantization,
        batch_size: int = DEFAULT_ONNX_BATCH,
        threads: int | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        directory, self.spec = exported_model(model_dir, quantization)
        self._name = name
        self._quantization = quantization
        self._model_id = f"onnx-int8:{name}" if quantization == "int8" else f"onnx:{name}"
        self._batch_size = batch_size
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or thread_count()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # see memvec.embed.threads
        self._session = ort.InferenceSession(str(directory / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.spec.layout.max_seq_length)
        self._spans_tokenizer: Any = None  # an untruncated copy, made when a document is first chunked
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self.spec.layout.dim

    @property
    def batch_invariant(self) -> bool:
        """Whether a text's vector is the same whatever else is in its batch. Not for int8: dynamic
        quantization scales each layer's activations by the largest value in the whole batch, so
        a LoCoMo turn embedded beside another text moves to cosine ~0.99 of itself alone."""
        return self._quantization != "int8"

    @property
    def max_tokens(self) -> int:
        """Tokens of text the window holds beside the special tokens ([CLS], [SEP])."""
        return self.spec.layout.max_seq_length - self._tokenizer.num_special_tokens_to_add(False)

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        if self._spans_tokenizer is None:
            from tokenizers import Tokenizer

            copy = Tokenizer.from_str(self._tokenizer.to_str())
            copy.no_truncation()
            self._spans_tokenizer = copy
        encodings = self._spans_tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [[(start, end) for start, end in e.offsets if end > start] for e in encodings]

    def _token_ids(self, texts: Sequence[str], kind: str) -> list[list[int]]:
        prompt = self.spec.layout.prompt_for(kind)
        prepared = [prompt + t for t in texts]
        if self.spec.layout.do_lower_case:
            prepared = [t.lower() for t in prepared]
        return [e.ids for e in self._tokenizer.encode_batch(prepared, add_special_tokens=True)]

    def _run(self, token_ids: list[list[int]]) -> Vectors:
        longest = max(len(ids) for ids in token_ids)
        ids = np.full((len(token_ids), longest), self.spec.pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, seq in enumerate(token_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, {name: feeds[name] for name in self.spec.inputs})[0]
        return pool(hidden, mask, self.spec.layout.pooling)

    def _embed(self, texts: Sequence[str], kind: str) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        token_ids = self._token_ids(texts, kind)
        order = np.argsort([len(ids) for ids in token_ids], kind="stable")  # similar lengths pad little
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:  # one forward pass at a time: it already uses every core
            for start in range(0, len(order), self._batch_size):
                rows = order[start : start + self._batch_size]
                EMBED_BATCH.observe(len(rows))
                out[rows] = self._run([token_ids[i] for i in rows])
        return l2_normalize(out)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "document")

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        if self.batch_invariant:
            return self._embed(texts, "query")
        # one pass each: a query's hits must not depend on which queries were asked with it
        return np.stack([self.embed_query(text) for text in texts]) if texts else self._embed([], "query")

    def embed_query(self, text: str) -> Vectors:
        vector: npt.NDArray[np.float32] = self._embed([text], "query")[0]
        return vector
