"""What a sentence-transformers model directory declares: its modules, pooling, sequence length,
lower-casing and prompts. The ONNX backend reproduces exactly this, so it reads it instead of
assuming mean pooling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memvec.errors import ModelExportError

# sentence-transformers' Pooling config keys, in the order it concatenates the modes
POOLING_KEYS = {
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "mean": "pooling_mode_mean_tokens",
    "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
# modules that change nothing memvec keeps: every backend L2-normalizes its vectors
_HARMLESS = {"sentence_transformers.models.Normalize"}


class ModelLayout(BaseModel):
    """The parts of a sentence-transformers model the ONNX backend must honour."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pooling: list[str] = Field(min_length=1, description="pooling modes, concatenated in this order")
    include_prompt: bool = True
    max_seq_length: int = Field(ge=1)
    do_lower_case: bool = False
    prompts: dict[str, str] = Field(default_factory=dict)
    dim: int = Field(ge=1)

    def prompt_for(self, kind: str) -> str:
        """The prompt sentence-transformers would prepend for a query or a document ('' if none)."""
        names = ("query",) if kind == "query" else ("document", "passage", "corpus")
        return next((self.prompts[n] for n in names if n in self.prompts), "")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelExportError(f"cannot read {path}: {exc}") from exc


def _pooling_modes(config: dict[str, Any]) -> list[str]:
    modes = [mode for mode, key in POOLING_KEYS.items() if config.get(key)]
    if not modes:
        raise ModelExportError(f"pooling config declares no mode the ONNX backend knows: {config}")
    return modes


def read_layout(model_dir: Path) -> ModelLayout:
    """Read the model's declared layout; refuse (ModelExportError) what the ONNX backend cannot reproduce."""
    if not (model_dir / "config.json").is_file():
        raise ModelExportError(f"{model_dir} is not a transformers/sentence-transformers model (no config.json)")
    hidden = int(_read_json(model_dir / "config.json").get("hidden_size", 0))
    modules_file = model_dir / "modules.json"
    pooling: dict[str, Any] = {"pooling_mode_mean_tokens": True}  # sentence-transformers' default without modules.json
    if modules_file.is_file():
        pooling = _pooling_from_modules(model_dir, _read_json(modules_file))
    st_config = model_dir / "sentence_bert_config.json"
    bert = _read_json(st_config) if st_config.is_file() else {}
    model_config = _read_json(model_dir / "config.json")
    max_len = bert.get("max_seq_length") or min(int(model_config.get("max_position_embeddings", 512)), 512)
    extra = model_dir / "config_sentence_transformers.json"
    prompts = (_read_json(extra).get("prompts") or {}) if extra.is_file() else {}
    modes = _pooling_modes(pooling)
    layout = ModelLayout(
        pooling=modes,
        include_prompt=bool(pooling.get("include_prompt", True)),
        max_seq_length=int(max_len),
        do_lower_case=bool(bert.get("do_lower_case", False)),
        prompts={str(k): str(v) for k, v in prompts.items() if v},
        dim=int(pooling.get("word_embedding_dimension") or hidden) * len(modes),
    )
    if layout.prompts and not layout.include_prompt:
        raise ModelExportError("pooling that excludes the prompt tokens is not implemented by the ONNX backend")
    return layout


def _pooling_from_modules(model_dir: Path, modules: list[dict[str, Any]]) -> dict[str, Any]:
    kinds = [m.get("type", "") for m in modules]
    unknown = [k for k in kinds if k not in (_TRANSFORMER, _POOLING, *_HARMLESS)]
    if unknown:
        raise ModelExportError(f"modules {unknown} are not implemented by the ONNX backend; use the torch backend")
    if kinds[:2] != [_TRANSFORMER, _POOLING]:
        raise ModelExportError(f"expected a Transformer then a Pooling module, found {kinds}")
    if modules[0].get("path", ""):
        raise ModelExportError("a Transformer module in a subfolder is not implemented by the ONNX backend")
    config: dict[str, Any] = _read_json(model_dir / modules[1]["path"] / "config.json")
    return config
