"""Settings of a memory home, typed and keyword-only.

Resolution order for every setting: explicit argument, then the environment (`ENVIRONMENT`:
``MEMVEC_HOME``, ``MEMVEC_MODEL``, ``MEMVEC_EMBED_BACKEND``, ``MEMVEC_STORE``, ...), then the default.
A home remembers the embedding model it was built with, so ``model=None`` means "whatever this home
uses" (MiniLM on the int8 ONNX backend for a new home).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memvec.embed import DEFAULT_MODEL_NAME, Backend
from memvec.types import Fusion, IndexKindSetting, Tier
from memvec.types.tools import ToolExecution

DEFAULT_HOME = "indexes"
DEFAULT_MODEL = DEFAULT_MODEL_NAME  # the packaged MiniLM; one name for config and embed


class SearchSettings(BaseModel):
    """Defaults for hybrid search; each can be overridden per request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fusion: Fusion = Fusion.CONVEX
    vector_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    rrf_k: int = Field(default=60, ge=1)
    candidate_pool: int = Field(
        default=100,
        ge=1,
        le=10_000,
        description="hybrid: how many candidates each method (vector, BM25) brings; a search for up to this many "
        "hits ranks the same pool, so its top hits are the same whatever k it asks; a larger k brings k",
    )
    refine_factor: int = Field(
        default=4,
        ge=1,
        description="vector mode on a compact index (-fp16, -sq8): fetch max(k, candidate_pool) * "
        "factor candidates and rank them by the exact float32 vectors read from the store",
    )
    rerank: bool = Field(
        default=True,
        description="hybrid: re-order the best fused candidates with the learned "
        "ranker shipped in the package, when it was fitted for the home's "
        "model and the fusion (convex; else plain fusion)",
    )
    session_spread: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="hybrid with spread_sessions: how much lower a turn scores, among the first hits, for each "
        "turn of its session picked before it (scores: fused, 0-1, or the ranker's)",
    )
    session_weight: float | None = Field(
        default=None,
        ge=0.0,
        le=10.0,
        description="hybrid: add this times the mean score of a record's session (or document) to its own "
        "vector and BM25 scores before fusion; 0 turns the session-level signal off. None: the "
        "weight the learned ranker was fitted with (2.0) when it re-orders, else 1.0",
    )


class IndexSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: IndexKindSetting | None = Field(
        default=None,
        description="None: the kind this home was built with ('auto' for a new home). 'auto': "
        "exact flat search for a tier below auto_hnsw_from records, hnsw-sq8 from "
        "there on; -fp16 stores vectors as 16-bit floats (half the memory), -sq8 as "
        "8-bit integers (a quarter)",
    )
    auto_hnsw_from: int = Field(
        default=50_000,
        ge=2,
        description="kind 'auto': a tier's index becomes hnsw-sq8 once it holds this many "
        "records, and flat again below half of it (rebuilt from the store)",
    )
    hnsw_m: int = Field(default=16, ge=4, le=128)
    hnsw_ef_construction: int = Field(default=100, ge=8)
    hnsw_ef_search: int = Field(default=256, ge=8)
    # Anserini's defaults; on LoCoMo they beat Lucene's 1.2/0.75 on both halves (benchmarks/results/ablation.md)
    bm25_k1: float = Field(default=0.9, gt=0.0)
    bm25_b: float = Field(default=0.4, ge=0.0, le=1.0)
    context_weight: float = Field(
        default=0.3, ge=0.0, le=1.0, description="BM25 weight of a record's context (e.g. the previous message)"
    )
    index_dates: bool = Field(default=True, description="index each record's date (e.g. '8 May 2023') for BM25")
    vector_context: bool = Field(default=True, description="embed a record with its context too (see embed_records)")
    long_text_windows: bool = Field(
        default=True,
        description="embed a record longer than the model's window past the window too (the rest in equal "
        "windows, added to the first window's vector at a quarter weight) instead of its first window only; "
        "records embedded before keep their vectors",
    )
    save_every: int = Field(
        default=2_000,
        ge=1,
        description="persist an index after this many unsaved changes (or an eighth of its records, if more)",
    )


class DedupSettings(BaseModel):
    """When an archival insert is merged into a current passage it repeats (memvec.index.duplicates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    near_cosine: float | None = Field(
        default=0.80,
        gt=0.0,
        le=1.0,
        description="an archival insert whose embedding has at least this cosine with one of the 3 nearest "
        "current passages, and whose words pass the lexical check, is merged into it (tags and "
        "missing citation fields added) instead of stored; None: exact duplicates only. The "
        "default is the best recall at precision >= 0.99 on LoCoMo observations "
        "(benchmarks/results/latest.md, 'Near-duplicates', judged leave-one-conversation-out)",
    )
    new_words: int = Field(
        default=0,
        ge=0,
        le=20,
        description="lexical check: content words one text may have that the other lacks (beyond case, "
        "punctuation, order, function words and one-letter typos); a differing number or "
        "negation always keeps two texts apart",
    )

    @field_validator("near_cosine", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        """ "off" (e.g. MEMVEC_NEAR_DUPLICATE_COSINE=off) turns near-duplicate merging off."""
        return None if isinstance(value, str) and value.strip().lower() in ("off", "none") else value


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    home: Path
    model: str | None = None
    store: str | None = Field(default=None, description="None: SQLite in the home; or a postgresql:// URL")
    store_timeout: float = Field(
        default=3.0,
        gt=0.0,
        le=300.0,
        description="seconds a store operation may wait for the database (a free connection, a SQLite lock) "
        "before StoreUnavailableError (HTTP 503)",
    )
    embed_backend: Backend | None = Field(
        default=None, description="torch, onnx or onnx-int8; None: the home's backend (onnx-int8 for a new home)"
    )
    embed_batch_size: int | None = Field(default=None, ge=1, description="None: the backend's tuned size")
    query_cache_size: int = Field(default=1024, ge=0, description="query vectors kept (LRU); 0 turns the cache off")
    query_batching: bool = Field(
        default=False,
        description="concurrent small inserts share one forward pass, "
        "and searches too unless the model is int8 (whose "
        "vectors depend on their batch); on in `memvec serve`",
    )
    max_loaded_indexes: int | None = Field(
        default=None,
        ge=1,
        description="keep at most this many (agent, tier) indexes in memory; the least "
        "recently used are saved and unloaded (None: no limit)",
    )
    index: IndexSettings = Field(default_factory=IndexSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    dedup: DedupSettings = Field(default_factory=DedupSettings)
    lease_wait_s: float = Field(
        default=30.0,
        ge=0.0,
        le=3600.0,
        description="how long a reply waits for its agent's lease while another server (or thread) replies "
        "for that agent, before AgentBusyError (HTTP 409, retry)",
    )
    lease_ttl_s: float = Field(
        default=30.0,
        ge=1.0,
        le=3600.0,
        description="how long an agent's lease outlives a server that stopped renewing it (killed, frozen): "
        "its agents wait this long for another server; renewed every third of it",
    )
    llm_timeout_s: float = Field(
        default=120.0,
        gt=0.0,
        le=3600.0,
        description="seconds one call to an agent's model (a reply step, a summary, a consolidation) may take "
        "before it fails (HTTP 502); the agent's lease is held meanwhile",
    )
    tool_execution: ToolExecution = Field(
        default="client",
        description="how a custom tool's call is answered: 'client' hands it back to the client (Letta's "
        "approval flow); 'subprocess' runs its Python source here, in a limited child process "
        "(memvec.tools.sandbox: read its threat model first)",
    )
    retention_days: dict[Tier, float] = Field(
        default_factory=dict,
        description="per tier, records older than this many days are never returned and "
        "are purged, e.g. {'recall': 90}; a tier not named keeps everything",
    )

    @field_validator("retention_days")
    @classmethod
    def _positive_days(cls, value: dict[Tier, float]) -> dict[Tier, float]:
        if any(not days > 0 for days in value.values()):
            raise ValueError("retention days must be positive")
        return value

    @classmethod
    def resolve(
        cls, *, home: str | os.PathLike[str] | None = None, model: str | None = None, **settings: Any
    ) -> MemoryConfig:
        """The one place settings are resolved: explicit values, then `ENVIRONMENT`, then defaults."""
        given: dict[str, Any] = {"home": home, "model": model, **settings}
        for key, variable in ENVIRONMENT.items():
            value = os.environ.get(variable) or None
            section, _, name = key.rpartition(".")
            if value is None:
                continue
            if section:  # a nested setting, e.g. index.save_every
                nested = given.get(section) or {}
                nested = nested.model_dump(exclude_unset=True) if isinstance(nested, BaseModel) else dict(nested)
                if nested.get(name) is None:
                    given[section] = {**nested, name: value}
            elif given.get(name) is None:
                given[name] = value
        given["home"] = Path(given["home"] or DEFAULT_HOME)
        return cls.model_validate(given)


# Every environment variable memvec reads for a setting (explicit arguments and options win over them).
ENVIRONMENT = {
    "home": "MEMVEC_HOME",
    "model": "MEMVEC_MODEL",
    "embed_backend": "MEMVEC_EMBED_BACKEND",
    "store": "MEMVEC_STORE",
    "max_loaded_indexes": "MEMVEC_MAX_LOADED_INDEXES",
    "query_cache_size": "MEMVEC_QUERY_CACHE_SIZE",  # 0: every search embeds its query (benchmarks)
    "llm_timeout_s": "MEMVEC_LLM_TIMEOUT_S",
    "tool_execution": "MEMVEC_TOOL_EXECUTION",
    "lease_ttl_s": "MEMVEC_LEASE_TTL_S",
    "index.save_every": "MEMVEC_SAVE_EVERY",  # fewer changes lost to a crash vs. more index writes
    "dedup.near_cosine": "MEMVEC_NEAR_DUPLICATE_COSINE",  # a number, or "off": exact repeats only
}
