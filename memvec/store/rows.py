"""Row mapping shared by the SQL stores: time format, record rows, embedding batches, filter SQL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memvec.limits import MAX_METADATA_DEPTH, json_depth_exceeds
from memvec.store.base import EmbeddingBatch
from memvec.types import AgentSettings, Citation, DocumentCitation, Record, SearchFilters, Tier

RECORD_COLUMNS = (
    "id, agent, tier, text, role, session_id, turn_id, source_url, tags, created_at, untrusted, "
    "expires_at, valid_from, valid_to, supersedes, superseded_by, document, written_by"
)
# event time: when a version held. valid_from NULL (rows from before versions) means its record time.
VALID_FROM = "COALESCE(valid_from, created_at)"
# a current version: never superseded, and not ended (valid_to, when set, still ahead)
CURRENT = "(valid_to IS NULL OR (superseded_by IS NULL AND valid_to > ?))"
EMBEDDING_COLUMNS = "id, text, embedding, embedding_model, context, created_at, session_id, role"


LOG_CHANGE = "INSERT INTO changes (agent, tier, record_id, op) VALUES (?, ?, ?, ?)"


def format_time(value: datetime) -> str:
    """Fixed-width UTC ISO text (4-digit year, microseconds), so string order is time order in SQL."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.removesuffix("Z")).replace(tzinfo=UTC)


def readable_metadata(value: Any) -> dict[str, Any]:
    """Stored metadata as it can be returned: metadata written before depth was bounded, and now
    too deep to validate, is replaced by a note, so the agent or block stays readable and deletable."""
    if isinstance(value, dict) and not json_depth_exceeds(value, MAX_METADATA_DEPTH):
        return value
    return {
        "memvec_note": f"the stored metadata nests more than {MAX_METADATA_DEPTH} levels deep and is "
        "hidden; set new metadata to replace it"
    }


def settings_from_json(raw: str) -> AgentSettings:
    data = json.loads(raw)
    return AgentSettings.model_validate({**data, "metadata": readable_metadata(data.get("metadata", {}))})


def _time_or_none(value: str | None) -> datetime | None:
    return parse_time(value) if value else None


def row_to_record(row: Any) -> Record:
    """A row with the RECORD_COLUMNS, by name (sqlite3.Row or a psycopg dict row). Every hit of a
    search is read through here: the common cases (no tags, valid since it was written) skip work."""
    created, valid_from = row["created_at"], row["valid_from"]
    created_at = parse_time(created)
    tags = row["tags"]
    return Record(
        id=row["id"],
        agent=row["agent"],
        tier=Tier(row["tier"]),
        text=row["text"],
        role=row["role"],
        tags=[] if tags == "[]" else json.loads(tags),
        created_at=created_at,
        untrusted=bool(row["untrusted"]),
        expires_at=_time_or_none(row["expires_at"]),
        valid_from=created_at if not valid_from or valid_from == created else parse_time(valid_from),
        valid_to=_time_or_none(row["valid_to"]),
        supersedes=row["supersedes"],
        superseded_by=row["superseded_by"],
        citation=_citation(row),
        written_by=row["written_by"],
    )


def _citation(row: Any) -> Citation:
    session_id, turn_id, source_url, document = (
        row["session_id"],
        row["turn_id"],
        row["source_url"],
        row["document"],
    )
    if session_id is None and turn_id is None and source_url is None and not document:
        return Citation()
    return Citation(
        session_id=session_id,
        turn_id=turn_id,
        source_url=source_url,
        document=DocumentCitation.model_validate_json(document) if document else None,
    )


def _validity(filters: SearchFilters | None, now: datetime | None) -> tuple[str, list[Any]] | None:
    """The versions a read sees: those that held at `filters.as_of`, else (with `now`) the current ones."""
    if filters is not None and filters.as_of is not None:
        at = format_time(filters.as_of)
        return f"{VALID_FROM} <= ? AND (valid_to IS NULL OR valid_to > ?)", [at, at]
    return (CURRENT, [format_time(now)]) if now is not None else None


def filter_sql(filters: SearchFilters | None, *, now: datetime | None = None) -> tuple[str, list[Any]]:
    """SQL conditions (to AND onto `agent = ? AND tier = ?`) for the search filters, with `?`
    placeholders (`memvec.store.sql.SQLStore` turns them into the driver's). Only the versions that
    held at `filters.as_of` when set, else with `now` the versions current then, else every version."""
    mark = "?"
    clauses: list[str] = []
    params: list[Any] = []
    if (validity := _validity(filters, now)) is not None:
        clauses.append(validity[0])
        params += validity[1]
    if filters is None:
        return (" AND " + clauses[0], params) if clauses else ("", [])
    if filters.start:
        clauses.append(f"created_at >= {mark}")
        params.append(format_time(filters.start))
    if filters.end:
        clauses.append(f"created_at <= {mark}")
        params.append(format_time(filters.end))
    if filters.session_id:
        clauses.append(f"session_id = {mark}")
        params.append(filters.session_id)
    if filters.roles:
        clauses.append(f"role IN ({','.join([mark] * len(filters.roles))})")
        params += filters.roles
    if filters.tags:
        marks = ",".join([mark] * len(filters.tags))
        having = f"HAVING COUNT(DISTINCT tag) = {len(set(filters.tags))}" if filters.tag_match == "all" else ""
        clauses.append(f"id IN (SELECT record_id FROM record_tags WHERE tag IN ({marks}) GROUP BY record_id {having})")
        params += filters.tags
    return (" AND " + " AND ".join(clauses), params) if clauses else ("", [])


def embedding_batch(rows: Sequence[Any]) -> EmbeddingBatch:
    """Rows with the EMBEDDING_COLUMNS (by name) -> a batch."""
    ids = np.array([r["id"] for r in rows], dtype=np.int64)
    blobs = [bytes(r["embedding"]) if r["embedding"] is not None else b"" for r in rows]
    dims = {len(b) // 4 for b in blobs if b}
    dim = dims.pop() if len(dims) == 1 else 0
    vectors = np.zeros((len(rows), dim), dtype=np.float32)
    models: list[str | None] = []
    for i, (row, blob) in enumerate(zip(rows, blobs, strict=True)):
        if blob and len(blob) // 4 == dim:
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
            models.append(row["embedding_model"])
        else:
            models.append(None)
    return EmbeddingBatch(
        ids=ids,
        vectors=vectors,
        texts=[r["text"] for r in rows],
        models=models,
        contexts=[r["context"] for r in rows],
        created_at=[r["created_at"] for r in rows],
        sessions=[r["session_id"] for r in rows],
        roles=[r["role"] for r in rows],
    )
