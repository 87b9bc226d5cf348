"""What opening a home decides before any tier is used: that the home can be written, which model
embeds it (recorded at its first open; another one refused), which index kind it keeps, and the
embedder searches go through."""

from __future__ import annotations

import tempfile
from pathlib import Path

from memvec.config import DEFAULT_MODEL, IndexSettings, MemoryConfig
from memvec.embed import Backend, backend_of, load_embedder, qualified_model_id, split_model_id
from memvec.embed.base import Embedder, LazyEmbedder
from memvec.embed.queries import MicroBatcher, QueryCache
from memvec.errors import InvalidInputError, ModelMismatchError
from memvec.store.base import Store

MODEL_META_KEY = "embedding_model"
INDEX_KIND_META_KEY = "index_kind"


def prepare_home(home: Path) -> Path:
    """The memory home, created if needed; a path that is a file, lies under a file, or cannot be
    written (read-only file system, permissions) is refused as an input error naming it."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=home):
            pass
    except FileExistsError as exc:
        raise InvalidInputError(
            f"memory home {home} is not a directory (a file is in the way: {exc.filename or home})"
        ) from exc
    except NotADirectoryError as exc:
        raise InvalidInputError(f"memory home {home} lies under a file, not a directory") from exc
    except OSError as exc:
        raise InvalidInputError(f"memory home {home} cannot be written: {exc.strerror or exc}") from exc
    return home


def requested_model(store: Store, name: str | None, backend: Backend | None) -> str | None:
    """The model id that `name` and `backend` ask for (None: neither given). What is not given
    comes from the home: its model name, and its backend (so `--model X` on a torch home stays torch)."""
    if name is None and backend is None:
        return None
    recorded = store.get_meta(MODEL_META_KEY)
    if name is None:
        name = split_model_id(recorded)[1] if recorded and backend_of(recorded) else DEFAULT_MODEL
    return qualified_model_id(name, backend, fallback=backend_of(recorded) if recorded else None)


def home_model(store: Store, home: Path, requested: str | None) -> str:
    """The home's model: the recorded one, or on a new home the requested one (else the default),
    recorded now. A request for another model than the recorded one is refused: it needs a rebuild."""
    recorded = store.get_meta(MODEL_META_KEY)
    if recorded is None:
        chosen = requested or qualified_model_id(DEFAULT_MODEL, None)
        store.set_meta(MODEL_META_KEY, chosen)
        return chosen
    if requested and requested != recorded:
        raise ModelMismatchError(
            f"the memory home {home} is embedded with {recorded!r}, not {requested!r}. "
            f"Run `memvec rebuild --model {requested}` to re-embed it, or drop "
            "--model/--embed-backend/MEMVEC_MODEL/MEMVEC_EMBED_BACKEND."
        )
    return recorded


def home_index_settings(store: Store, settings: IndexSettings) -> IndexSettings:
    """An explicit kind is remembered for the home (its indexes rebuild on next load);
    otherwise the home's recorded kind, 'auto' for a new home."""
    recorded = store.get_meta(INDEX_KIND_META_KEY)
    kind = settings.kind or recorded or "auto"
    if kind != recorded:
        store.set_meta(INDEX_KIND_META_KEY, kind)
    return settings.model_copy(update={"kind": kind})


def lazy_embedder(model_id: str, config: MemoryConfig) -> LazyEmbedder:
    """The model, loaded at its first use (a home opened to list agents never loads it)."""
    batch = config.embed_batch_size
    return LazyEmbedder(model_id, lambda: load_embedder(model_id, batch_size=batch))


def serving_embedder(embedder: Embedder, config: MemoryConfig) -> Embedder:
    """The embedder searches go through: query vectors cached, and batched across threads if asked."""
    if config.query_batching:
        embedder = MicroBatcher(embedder)
    if config.query_cache_size:
        embedder = QueryCache(embedder, config.query_cache_size)
    return embedder
