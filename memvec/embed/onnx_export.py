"""Turn a sentence-transformers model already on disk into an ONNX Runtime model, once, and cache it.

Why this route: sentence-transformers' own ONNX export goes through ``optimum-onnx``, which wants an
older ``transformers`` than the one sentence-transformers installs, so on a fresh machine it does
not resolve. Here the transformer is traced with ``torch.onnx.export`` (the TorchScript exporter:
seconds, one self-contained file, no extra package), fused with ONNX Runtime's own transformer
optimizer where it knows the architecture, and for ``int8`` dynamically quantized with
``onnxruntime.quantization`` (MatMul weights, per channel: per-tensor int8 drops MiniLM's cosine to
the fp32 vectors to 0.95, per channel keeps it at 0.99). Pooling stays outside the graph and follows
the model's declared layout (:mod:`memvec.embed.st_layout`).

Torch is imported only here and only when an export is needed. The result lives under
``<cache>/onnx/<content hash>-opset<N>-<quantization>/`` (``MEMVEC_CACHE``, default
``$XDG_CACHE_HOME/memvec`` or ``~/.cache/memvec``), so every home on the machine reuses it; it is
written to a temporary folder and renamed into place, so a failed export never leaves a half-written
model behind, and under a file lock, so processes starting at once on a fresh machine export it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from memvec.embed.locate import cache_root
from memvec.embed.st_layout import ModelLayout, read_layout
from memvec.errors import ModelExportError, QuantizationRefusedError

log = logging.getLogger("memvec.embed")

OPSET = 17
Quantization = Literal["none", "int8"]
MODEL_FILE, TOKENIZER_FILE, SPEC_FILE = "model.onnx", "tokenizer.json", "memvec-onnx.json"
_SKIPPED = {"README.md", ".gitattributes"}
_FP32_CHECK = 0.9999  # cosine of the exported fp32 graph to torch on sample texts, or the export is refused
# cosine of the int8 graph's mean-pooled vectors to the fp32 graph's, or int8 is refused: MiniLM keeps
# 0.99; all-mpnet-base-v2 exported with transformers 5 fell to 0.05 without a word (its search was noise)
_INT8_CHECK = 0.95
REFUSED_FILE = "memvec-int8-refused.txt"
_SAMPLES = [
    "memvec checks its exported model on a few sentences.",
    "Hi!",
    "When did Caroline go to the LGBTQ support group? She went on 7 May 2023, the day before the talk.",
]


class OnnxSpec(BaseModel):
    """What the runtime needs besides the graph and the tokenizer, written last (its presence marks a
    complete export)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    fingerprint: str
    quantization: Quantization
    opset: int
    layout: ModelLayout
    pad_id: int
    inputs: list[str]
    optimized: bool


def _source_files(model_dir: Path) -> list[Path]:
    return sorted(
        p
        for p in model_dir.rglob("*")
        if p.is_file()
        and p.name not in _SKIPPED
        and not any(part.startswith(".") for part in p.relative_to(model_dir).parts)
    )


def model_fingerprint(model_dir: Path) -> str:
    """SHA-256 over the model's files (names and bytes). Memoized per directory by file sizes and
    modification times, so a cold start re-stats the files instead of re-reading 90 MB."""
    files = _source_files(model_dir)
    signature = [[str(p.relative_to(model_dir)), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    memo = cache_root() / "fingerprints" / (hashlib.sha256(str(model_dir.resolve()).encode()).hexdigest() + ".json")
    try:
        saved = json.loads(memo.read_text())
        if saved["signature"] == signature:
            return str(saved["sha256"])
    except (OSError, ValueError, KeyError):
        pass
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(model_dir)).encode() + b"\0")
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    value = digest.hexdigest()
    _write_quietly(memo, json.dumps({"signature": signature, "sha256": value}))
    return value


def _write_quietly(path: Path, text: str) -> None:
    """A memo that cannot be written only costs the next start a re-hash."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        pass


def exported_model(model_dir: Path, quantization: Quantization) -> tuple[Path, OnnxSpec]:
    """The cached ONNX export of ``model_dir`` (exporting it first if needed) and its spec."""
    layout = read_layout(model_dir)  # refuses an unsupported model before anything is written
    fingerprint = model_fingerprint(model_dir)
    target = cache_root() / "onnx" / f"{fingerprint[:24]}-opset{OPSET}-{quantization}"
    refused = target.with_name(target.name + "-" + REFUSED_FILE)
    if refused.is_file():  # checked once: a model that quantizes badly is not exported again at every start
        raise QuantizationRefusedError(refused.read_text())
    if not (target / SPEC_FILE).is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        with _export_lock(target):  # two processes starting on a fresh machine export once, not twice
            if refused.is_file():
                raise QuantizationRefusedError(refused.read_text())
            if not (target / SPEC_FILE).is_file():
                _export_into(model_dir, layout, target, refused, quantization, fingerprint)
    return target, OnnxSpec.model_validate_json((target / SPEC_FILE).read_text())


@contextmanager
def _export_lock(target: Path) -> Iterator[None]:
    """Held while one process exports ``target``; others wait, then find the export done."""
    locks = cache_root() / "locks"  # beside the exports, not among them: a lock file is not a model
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"onnx-{target.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _export_into(
    model_dir: Path, layout: ModelLayout, target: Path, refused: Path, quantization: Quantization, fingerprint: str
) -> None:
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".export-"))
    # a warning because it is the one line a first run should show (the CLI configures no logging):
    # this start takes seconds where every later one takes a tenth of one
    log.warning(
        "first use of %s on ONNX Runtime (%s): exporting and checking it once, ~15 s on 2 cores; later starts load %s",
        model_dir,
        quantization,
        target,
    )
    started = time.perf_counter()
    try:
        try:
            _export(model_dir, layout, scratch, quantization, fingerprint)
        except QuantizationRefusedError as exc:
            _write_quietly(refused, str(exc))
            raise
        try:
            os.rename(scratch, target)
        except OSError:
            if not (target / SPEC_FILE).is_file():  # not another process's complete export: a real failure
                raise
        log.info("exported %s in %.1f s", model_dir, time.perf_counter() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _export(model_dir: Path, layout: ModelLayout, out: Path, quantization: Quantization, fingerprint: str) -> None:
    with warnings.catch_warnings(), _quiet_logging():
        warnings.simplefilter("ignore")  # tracer and quantizer chatter; the result is checked below
        try:
            model, tokenizer = _load_transformer(model_dir)
            inputs = _trace(model, tokenizer, out / "fp32.onnx")
            _check_fp32(model, tokenizer, out / "fp32.onnx", inputs)
            optimized = _optimize(out / "fp32.onnx", out / "optimized.onnx", model.config)
            graph = out / ("optimized.onnx" if optimized else "fp32.onnx")
            if quantization == "int8":
                _quantize(graph, out / MODEL_FILE)
                _check_int8(tokenizer, graph, out / MODEL_FILE, inputs, model_dir)
            else:
                graph.rename(out / MODEL_FILE)
            tokenizer.backend_tokenizer.save(str(out / TOKENIZER_FILE))
        except ModelExportError:  # QuantizationRefusedError included
            raise
        except Exception as exc:  # torch/onnx raise anything; the caller gets one clear kind
            raise ModelExportError(f"cannot export {model_dir} to ONNX: {type(exc).__name__}: {exc}") from exc
    for leftover in ("fp32.onnx", "optimized.onnx"):
        (out / leftover).unlink(missing_ok=True)
    spec = OnnxSpec(
        source=str(model_dir),
        fingerprint=fingerprint,
        quantization=quantization,
        opset=OPSET,
        layout=layout,
        pad_id=int(tokenizer.pad_token_id or 0),
        inputs=inputs,
        optimized=optimized,
    )
    (out / SPEC_FILE).write_text(spec.model_dump_json(indent=2))


@contextmanager
def _quiet_logging() -> Iterator[None]:
    """The optimizer and quantizer log advice to the root logger; a user only needs errors."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _load_transformer(model_dir: Path) -> tuple[Any, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # a bare "Loading weights" bar; the export says what it does
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), use_fast=True)
        model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    except (OSError, ValueError) as exc:
        raise ModelExportError(f"cannot load {model_dir} with transformers: {exc}") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ModelExportError(f"{model_dir} has no fast tokenizer; the ONNX backend needs one")
    return model, tokenizer


def _hidden_states_module(model: Any, inputs: list[str]) -> Any:
    """The transformer as a module of positional tensors returning token embeddings (what gets traced)."""
    import torch

    class HiddenStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> Any:
            return self.model(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    return HiddenStates().eval()


def _model_inputs(model: Any) -> list[str]:
    accepted = inspect.signature(model.forward).parameters
    return [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted]


def _feeds(tokenizer: Any, texts: list[str], inputs: list[str]) -> dict[str, np.ndarray]:
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="np")
    ids = batch["input_ids"].astype(np.int64)
    found = {
        "input_ids": ids,
        "attention_mask": batch["attention_mask"].astype(np.int64),
        "token_type_ids": np.zeros_like(ids),
    }
    return {name: found[name] for name in inputs}


def _trace(model: Any, tokenizer: Any, path: Path) -> list[str]:
    import torch

    inputs = _model_inputs(model)
    feeds = _feeds(tokenizer, _SAMPLES, inputs)
    axes = {name: {0: "batch", 1: "sequence"} for name in [*inputs, "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(
            _hidden_states_module(model, inputs),
            tuple(torch.from_numpy(feeds[n]) for n in inputs),
            str(path),
            input_names=inputs,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    return inputs


def _check_fp32(model: Any, tokenizer: Any, path: Path, inputs: list[str]) -> None:
    import onnxruntime as ort
    import torch

    feeds = _feeds(tokenizer, [*_SAMPLES, "short"], inputs)
    with torch.no_grad():
        expected = model(**{n: torch.from_numpy(v) for n, v in feeds.items()}).last_hidden_state.numpy()
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mask = feeds["attention_mask"].astype(bool)
    a, b = expected[mask], got[mask]
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    if float(cosine.min()) < _FP32_CHECK:
        raise ModelExportError(f"the exported graph disagrees with torch (token cosine {cosine.min():.5f})")


def _check_int8(tokenizer: Any, fp32: Path, int8: Path, inputs: list[str], model_dir: Path) -> None:
    import onnxruntime as ort

    feeds = _feeds(tokenizer, [*_SAMPLES, "short"], inputs)
    mask = feeds["attention_mask"][..., None].astype(np.float32)
    pooled = []
    for path in (fp32, int8):
        hidden = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        vectors = (hidden * mask).sum(axis=1) / mask.sum(axis=1)
        pooled.append(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    cosine = float((pooled[0] * pooled[1]).sum(axis=1).min())
    if cosine < _INT8_CHECK:
        raise QuantizationRefusedError(
            f"{model_dir.name} quantizes badly: its int8 vectors agree with fp32 only to cosine {cosine:.3f} "
            f"(under {_INT8_CHECK}); use its fp32 ONNX backend (onnx:<name>)"
        )


def _optimize(source: Path, target: Path, config: Any) -> bool:
    """ONNX Runtime's transformer fusions (attention, embedding + LayerNorm, bias + GELU, skip +
    LayerNorm) where it knows the architecture: on MiniLM, int8 queries 1.9 -> 1.2 ms."""
    from onnxruntime.transformers.optimizer import optimize_model

    if config.model_type not in ("bert", "roberta", "xlm-roberta", "distilbert", "electra"):
        return False
    optimized = optimize_model(
        str(source),
        model_type="bert",
        opt_level=1,
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
    )
    optimized.save_model_to_file(str(target))
    return True


def _quantize(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Attention"],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
