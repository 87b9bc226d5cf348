"""What `Memory`'s maintenance methods return: stats, rebuild and verify reports."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memvec.types import Tier


class IndexUsage(BaseModel):
    """Loaded (agent, tier) indexes against the budget, and what the budget cost."""

    loaded: int
    budget: int | None = Field(description="None: no limit")
    loads: int = Field(description="indexes opened (first use, or again after an eviction)")
    evictions: int = Field(description="indexes saved and unloaded to stay within the budget")


class PartitionStats(BaseModel):
    agent: str
    tier: Tier
    records: int
    model_id: str | None
    dim: int | None
    index_kind: str | None
    index_bytes: int
    last_change: int
    indexed_change: int | None


class Stats(BaseModel):
    home: str
    model_id: str
    store_bytes: int
    indexes: IndexUsage
    partitions: list[PartitionStats]


class RebuildReport(BaseModel):
    agent: str
    tier: Tier
    records: int
    reembedded: int
    seconds: float


class VerifyProblem(BaseModel):
    agent: str
    tier: Tier
    problem: str


class IndexBehind(BaseModel):
    """A saved index that is behind the store's change log: not a fault, the next open (or
    ``verify --repair``) replays the changes from the store without re-embedding anything."""

    agent: str
    tier: Tier
    changes: int
    saved_at_change: int


class NotLoaded(BaseModel):
    """A partition with records in the store and no index saved in this home: never loaded by this
    server (another cluster member serves it) or not opened since a restore. Its first use builds it."""

    agent: str
    tier: Tier


class OldFormat(BaseModel):
    """Index files written by an older memvec: not a fault, they are rebuilt from the store when the
    partition is next opened (or by ``verify --repair``)."""

    agent: str
    tier: Tier
    detail: str


class OrphanDocument(BaseModel):
    """A document whose folder is gone: no route reaches it, yet its text is in the store (and in
    backups). ``verify --repair`` deletes it with every agent's copies of its chunks."""

    document_id: int
    owner: str
    name: str


class VerifyReport(BaseModel):
    problems: list[VerifyProblem]
    behind: list[IndexBehind]
    not_loaded: list[NotLoaded] = Field(default_factory=list)
    old_format: list[OldFormat] = Field(default_factory=list)
    orphans: list[OrphanDocument] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.orphans


class ForgetApplied(BaseModel):
    """What a restore deleted again because the forget log says it was forgotten after the backup."""

    log: str = Field(description="the forget log read")
    backup_taken_at: datetime
    tombstones: int = Field(description="tombstones in the log newer than the backup")
    records: int = 0
    documents: int = 0
    agents: int = 0
    block_histories: int = 0
