"""Export an agent to one JSON document and import it into any memvec home.

The document holds the agent's settings and state, its core blocks, ALL its passages and messages
with citations and timestamps, and (optionally) their embeddings with the model id. Importing into
a home with the same model reuses the embeddings; any other model re-embeds the text.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from memvec.errors import InvalidInputError, NotFoundError
from memvec.memory import Memory
from memvec.types import (
    MAX_TAGS,
    AgentName,
    AgentSettings,
    AgentState,
    Citation,
    CoreBlock,
    NewRecord,
    Record,
    Tier,
)

EXPORT_FORMAT = "memvec-agent-export"


class ExportedRecord(BaseModel):
    id: int
    text: str
    role: str | None = None
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    citation: Citation = Field(default_factory=Citation)
    created_at: datetime
    untrusted: bool = False
    embedding: str | None = Field(default=None, description="base64 of little-endian float32")


class AgentExport(BaseModel):
    format: Literal["memvec-agent-export"] = "memvec-agent-export"
    version: Literal[1] = 1
    exported_at: datetime
    embedding_model: str
    dim: int | None = None
    agent: AgentSettings
    state: AgentState = Field(default_factory=AgentState)
    blocks: list[CoreBlock] = Field(default_factory=list)
    passages: list[ExportedRecord] = Field(default_factory=list)
    messages: list[ExportedRecord] = Field(default_factory=list)


class ImportReport(BaseModel):
    agent: str
    passages: int
    messages: int
    reembedded: bool


def _all_records(memory: Memory, agent: str, tier: Tier) -> list[Record]:
    records: list[Record] = []
    while batch := memory.engine.list_records(agent, tier, limit=1000, offset=len(records)):
        records += batch
    return records


def _exported(memory: Memory, agent: str, tier: Tier, with_embeddings: bool) -> list[ExportedRecord]:
    records = _all_records(memory, agent, tier)
    vectors: dict[int, np.ndarray] = {}
    if with_embeddings:
        for batch in memory.store.embeddings(agent, tier):
            vectors.update({int(i): v for i, v, m in zip(batch.ids, batch.vectors, batch.models, strict=True) if m})
    return [ExportedRecord(**r.model_dump(exclude={"agent", "tier"}),
                           embedding=base64.b64encode(vectors[r.id].astype("<f4").tobytes()).decode()
                           if r.id in vectors else None) for r in records]


def export_agent(memory: Memory, name: str, *, with_embeddings: bool = True) -> AgentExport:
    found = memory.store.get_agent(name)
    if found is None and name not in memory.agents():
        raise NotFoundError(f"no agent {name!r}")
    settings, state = found or (AgentSettings(name=name), AgentState())
    return AgentExport(exported_at=datetime.now(UTC), embedding_model=memory.model_id, agent=settings, state=state,
                       dim=memory.engine.embedder.dim if with_embeddings else None,
                       blocks=memory.core(name).blocks(),
                       passages=_exported(memory, name, Tier.ARCHIVAL, with_embeddings),
                       messages=_exported(memory, name, Tier.RECALL, with_embeddings))


def _vectors(doc: AgentExport, rows: list[ExportedRecord], memory: Memory) -> np.ndarray | None:
    """The exported embeddings when they are usable here (same model, all present), else None."""
    if doc.embedding_model != memory.model_id or not rows or any(r.embedding is None for r in rows):
        return None
    try:
        vectors = np.stack([np.frombuffer(base64.b64decode(r.embedding or ""), dtype="<f4") for r in rows])
    except ValueError as exc:
        raise InvalidInputError(f"bad embedding in export: {exc}") from exc
    return vectors.astype(np.float32) if vectors.shape[1] == memory.engine.embedder.dim else None


def _insert(memory: Memory, doc: AgentExport, name: str, tier: Tier, rows: list[ExportedRecord]
            ) -> tuple[dict[int, int], bool]:
    records = [NewRecord.model_validate({"agent": name, "tier": tier, "text": r.text, "role": r.role,
                                         "tags": r.tags, "citation": r.citation, "created_at": r.created_at})
               for r in rows]
    vectors = _vectors(doc, rows, memory)
    results = memory.engine.insert(records, vectors) if records else []
    return {r.id: res.record.id for r, res in zip(rows, results, strict=True)}, vectors is None and bool(rows)


def import_agent(memory: Memory, doc: AgentExport, *, name: AgentName | None = None) -> ImportReport:
    """Restore an exported agent (under `name`, or its own). Refuses to overwrite an existing agent."""
    target = name or doc.agent.name
    if target in memory.agents():
        raise InvalidInputError(f"agent {target!r} already exists here; delete it or import under another name")
    for block in doc.blocks:
        memory.core(target).put(block)
    _, passages_reembedded = _insert(memory, doc, target, Tier.ARCHIVAL, doc.passages)
    id_map, messages_reembedded = _insert(memory, doc, target, Tier.RECALL, doc.messages)
    state = doc.state.model_copy(update={"in_context": [id_map[i] for i in doc.state.in_context if i in id_map]})
    memory.store.put_agent(doc.agent.model_copy(update={"name": target}), state)
    return ImportReport(agent=target, passages=len(doc.passages), messages=len(doc.messages),
                        reembedded=passages_reembedded or messages_reembedded)
