"""Export an agent to one JSON document and import it into any memvec home.

The document holds the agent's settings and state, its core blocks, ALL its passages and messages
with citations and timestamps, and (optionally) their embeddings with the model id. Importing into
a home with the same model reuses the embeddings; any other model re-embeds the text.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np
from pydantic import ValidationError

from memvec.embed.base import checked_vectors
from memvec.engine.engine import Engine
from memvec.errors import AgentExistsError, InvalidInputError
from memvec.exchange.consolidation import ConsolidationRun
from memvec.exchange.export import AgentExport, ExportedDocument, ExportedRecord, ExportedSharedBlock, ImportReport
from memvec.guard import checked_on_read
from memvec.store.base import NewDocument, PreparedRecord, Store
from memvec.store.blocks import SHARED_OWNER_PREFIX
from memvec.types import (
    AgentSettings,
    AgentState,
    CoreBlock,
    NewRecord,
    Record,
    Tier,
    describe_validation_error,
)


def _all_records(engine: Engine, agent: str, tier: Tier) -> list[Record]:
    """Every version of every record of the tier (current, superseded, ended), oldest id first."""
    engine.sweep(agent, tier)  # what expired is not exported
    ids = sorted(int(i) for i in engine.store.ids(agent, tier))
    records: list[Record] = []
    for start in range(0, len(ids), 1000):
        records += engine.store.get(agent, ids[start : start + 1000])
    return sorted(checked_on_read(records), key=lambda r: r.id)


def _exported(engine: Engine, agent: str, tier: Tier, with_embeddings: bool) -> list[ExportedRecord]:
    records = _all_records(engine, agent, tier)
    vectors: dict[int, np.ndarray] = {}
    if with_embeddings:
        for batch in engine.store.embeddings(agent, tier):
            vectors.update({int(i): v for i, v, m in zip(batch.ids, batch.vectors, batch.models, strict=True) if m})
    return [
        ExportedRecord(
            **r.model_dump(exclude={"agent", "tier", "superseded_by"}),
            embedding=base64.b64encode(vectors[r.id].astype("<f4").tobytes()).decode() if r.id in vectors else None,
        )
        for r in records
    ]


def export_agent(
    engine: Engine, settings: AgentSettings, state: AgentState, *, model_id: str, with_embeddings: bool = True
) -> AgentExport:
    """The agent (found by the caller) with its blocks and all its records."""
    name = settings.name
    shared = _shared_blocks(engine.store, name)
    held = {block.label for block in shared}
    return AgentExport(
        exported_at=datetime.now(UTC),
        embedding_model=model_id,
        agent=settings,
        state=state,
        dim=engine.embedder.dim if with_embeddings else None,
        blocks=[b for b in engine.store.blocks(name) if b.label not in held],
        block_history=engine.store.block_history(name),
        shared_blocks=shared,
        consolidations=engine.store.runs(name),
        passages=(passages := _exported(engine, name, Tier.ARCHIVAL, with_embeddings)),
        messages=_exported(engine, name, Tier.RECALL, with_embeddings),
        documents=_exported_documents(engine.store, name, passages),
    )


def _exported_documents(store: Store, agent: str, passages: list[ExportedRecord]) -> list[ExportedDocument]:
    """The agent's own documents (every version) and those its passages are chunks of (a folder's)."""
    ids = {d.id for d in store.documents(agent, include_replaced=True)}
    ids |= {p.citation.document.document_id for p in passages if p.citation.document is not None}
    out = []
    for document in sorted(ids):
        found = store.document(document)
        if found is not None:
            blocks = [(s, e, p, list(h)) for s, e, p, h in store.document_blocks(document)]
            out.append(
                ExportedDocument(
                    **found.model_dump(exclude={"owner", "status"}),
                    blocks=blocks,
                    text=store.document_text(document) or "",
                )
            )
    return out


def _write_documents(store: Store, agent: str, documents: list[ExportedDocument]) -> dict[int, int]:
    """The exported documents, owned by the agent (inside the caller's transaction); old id -> new id."""
    new_ids: dict[int, int] = {}
    for doc in sorted(documents, key=lambda d: d.id):
        new_ids[doc.id] = store.add_document_row(
            NewDocument(
                owner=agent,
                name=doc.name,
                content_hash=doc.content_hash,
                media_type=doc.media_type,
                size_bytes=doc.size_bytes,
                text=doc.text,
                pages=doc.pages,
                title=doc.title,
                chunks=doc.chunks,
                blocks=[(s, e, p, tuple(h)) for s, e, p, h in doc.blocks],
                created_at=doc.created_at,
                original_name=doc.original_name,
            )
        )
    return new_ids


def _cites_new_documents(row: PreparedRecord, documents: dict[int, int]) -> PreparedRecord:
    """A chunk citing its document by the document's id in this home (and keyed by it)."""
    cited = row.record.citation.document
    if cited is None:
        return row
    citation = row.record.citation.model_copy(
        update={"document": cited.model_copy(update={"document_id": documents[cited.document_id]})}
    )
    record = row.record.model_copy(update={"citation": citation})
    return replace(row, record=record, dedup_key=record.dedup_key())


def _shared_blocks(store: Store, agent: str) -> list[ExportedSharedBlock]:
    return [
        ExportedSharedBlock(
            **block.model_dump(), id=owner.removeprefix(SHARED_OWNER_PREFIX), history=store.block_history(owner)
        )
        for owner in store.attachments(agent).values()
        for block in store.blocks(owner)
    ]


def _attach_shared(store: Store, agent: str, shared: list[ExportedSharedBlock]) -> dict[int, int]:
    """Attach the agent to its shared blocks again, making each (with its history) where this home
    has none of that id; one that exists is kept as this home has it. Returns old seq -> new seq."""
    seqs: dict[int, int] = {}
    for block in shared:
        owner = SHARED_OWNER_PREFIX + block.id
        if not store.blocks(owner):
            plain = CoreBlock.model_validate(block.model_dump(exclude={"id", "history"}))
            if block.history:
                seqs |= store.restore_blocks(owner, [plain], block.history)
            else:
                store.put_block(owner, plain, actor="import", op="import")
        store.attach_block(agent, owner)
    return seqs


def _vectors(
    doc: AgentExport, rows: list[ExportedRecord], engine: Engine, model_id: str, what: str
) -> np.ndarray | None:
    """The exported embeddings when they are from this home's model and every row has one (else
    None: the text is embedded here). Checked whole: each decodes to the model's dimension, finite,
    and is re-normalized; anything else refuses the import (InvalidInputError)."""
    if doc.embedding_model != model_id or not rows or any(r.embedding is None for r in rows):
        return None
    dim = engine.embedder.dim
    decoded = []
    for row in rows:
        try:
            raw = base64.b64decode(row.embedding or "", validate=True)
        except ValueError as exc:
            raise InvalidInputError(f"{what} {row.id}: the embedding is not base64 ({exc})") from exc
        if len(raw) != 4 * dim:
            raise InvalidInputError(
                f"{what} {row.id}: the embedding has {len(raw) / 4:g} values; {doc.embedding_model} has {dim}"
            )
        decoded.append(np.frombuffer(raw, dtype="<f4"))
    try:
        return checked_vectors(np.stack(decoded), len(rows), dim)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{what}s: {exc}") from exc


def _prepared(
    engine: Engine, model_id: str, doc: AgentExport, name: str, tier: Tier, rows: list[ExportedRecord]
) -> tuple[list[PreparedRecord], bool]:
    """The tier's rows validated and embedded (or with their checked embeddings); nothing written."""
    what = "passage" if tier is Tier.ARCHIVAL else "message"
    records = []
    for row in rows:
        try:
            records.append(
                NewRecord.model_validate(
                    {
                        "agent": name,
                        "tier": tier,
                        "text": row.text,
                        "role": row.role,
                        "tags": row.tags,
                        "citation": row.citation,
                        "created_at": row.created_at,
                        "expires_at": row.expires_at,
                        "valid_from": row.valid_from,
                        "valid_to": row.valid_to,
                    }
                )
            )
        except ValidationError as exc:
            raise InvalidInputError(f"{what} {row.id}: {describe_validation_error(exc)}") from exc
    vectors = _vectors(doc, rows, engine, model_id, what)
    prepared = engine.prepare(name, tier, records, vectors) if records else []
    return prepared, vectors is None and bool(rows)


@dataclass(frozen=True)
class _ReadyAgent:
    """One agent of an import, validated and embedded, waiting for the transaction."""

    doc: AgentExport
    name: str
    passages: list[PreparedRecord]
    messages: list[PreparedRecord]
    reembedded: bool


def _ready(engine: Engine, model_id: str, doc: AgentExport, name: str) -> _ReadyAgent:
    held = {d.id for d in doc.documents}
    for row in doc.passages:
        if row.citation.document is not None and row.citation.document.document_id not in held:
            raise InvalidInputError(
                f"passage {row.id} is a chunk of document {row.citation.document.document_id}, "
                "which the export does not hold"
            )
    # oldest id first: a version comes after the one it replaced
    doc = doc.model_copy(
        update={
            "passages": sorted(doc.passages, key=lambda r: r.id),
            "messages": sorted(doc.messages, key=lambda r: r.id),
        }
    )
    passages, passages_reembedded = _prepared(engine, model_id, doc, name, Tier.ARCHIVAL, doc.passages)
    messages, messages_reembedded = _prepared(engine, model_id, doc, name, Tier.RECALL, doc.messages)
    return _ReadyAgent(doc, name, passages, messages, passages_reembedded or messages_reembedded)


def _insert_versions(store: Store, rows: list[ExportedRecord], prepared: list[PreparedRecord]) -> dict[int, int]:
    """Insert the rows one by one in id order, each new version linked to the new id of the one it
    replaced (which closes that one, as an update does); returns exported id -> new id."""
    new_ids: dict[int, int] = {}
    for row, ready in zip(rows, prepared, strict=True):
        if row.supersedes is not None and row.supersedes in new_ids:
            ready = replace(ready, record=ready.record.model_copy(update={"supersedes": new_ids[row.supersedes]}))
        [(new_ids[row.id], _)] = store.insert([ready])
    return new_ids


def _write(engine: Engine, ready: _ReadyAgent) -> None:
    """The agent's blocks, records and settings (inside the caller's transaction)."""
    store = engine.store
    seqs = (
        store.restore_blocks(ready.name, ready.doc.blocks, ready.doc.block_history) if ready.doc.block_history else {}
    )
    for block in [] if ready.doc.block_history else ready.doc.blocks:
        store.put_block(ready.name, block, actor="import", op="import")
    seqs |= _attach_shared(store, ready.name, ready.doc.shared_blocks)
    id_map = _insert_versions(store, ready.doc.messages, ready.messages)
    documents = _write_documents(store, ready.name, ready.doc.documents)
    passage_map = _insert_versions(
        store,
        ready.doc.passages,
        [_cites_new_documents(_cites_new_ids(row, id_map), documents) for row in ready.passages],
    )
    for doc in ready.doc.documents:  # the chunks of a replaced version came closed already
        if doc.replaced_by in documents and doc.replaced_at is not None:
            store.replace_document(documents[doc.id], documents[doc.replaced_by], doc.replaced_at)
    for run in ready.doc.consolidations:
        store.restore_run(ready.name, _remapped_run(run, passage_map, id_map, seqs))
    state = ready.doc.state.model_copy(
        update={"in_context": [id_map[i] for i in ready.doc.state.in_context if i in id_map]}
    )
    store.put_agent(ready.doc.agent.model_copy(update={"name": ready.name}), state)


RECALL_CITATION = "memvec:recall/"  # a consolidated fact's source_url: the recall ids it came from


def _cites_new_ids(row: PreparedRecord, messages: dict[int, int]) -> PreparedRecord:
    """A consolidated fact citing the messages it came from by their ids in this home."""
    url = row.record.citation.source_url or ""
    if not url.startswith(RECALL_CITATION):
        return row
    old = [int(i) for i in url.removeprefix(RECALL_CITATION).split(",") if i.isascii() and i.isdigit()]
    cited = RECALL_CITATION + ",".join(str(messages[i]) for i in old if i in messages)
    citation = row.record.citation.model_copy(update={"source_url": cited})
    return replace(row, record=row.record.model_copy(update={"citation": citation}))


def _remapped_run(
    run: ConsolidationRun, passages: dict[int, int], messages: dict[int, int], seqs: dict[int, int]
) -> ConsolidationRun:
    """A run with every id it names (facts, the messages they cite, what they superseded, the last
    message read, the block changes) those of this home. A fact whose passage did not come along
    points at no record (0), so undoing the run refuses as for a fact deleted since; a cited message
    that did not come is dropped from its sources; the last message read becomes the latest one that
    came at or before it, so the next run does not read old messages again."""
    read = sorted(old for old in messages if run.through_message is not None and old <= run.through_message)
    facts = [
        fact.model_copy(
            update={
                "id": passages.get(fact.id, 0),
                "sources": [messages[s] for s in fact.sources if s in messages],
                "supersedes": passages.get(fact.supersedes) if fact.supersedes is not None else None,
            }
        )
        for fact in run.facts
    ]
    blocks = [block.model_copy(update={"seq": seqs.get(block.seq, 0)}) for block in run.blocks]
    return run.model_copy(
        update={"facts": facts, "blocks": blocks, "through_message": messages[read[-1]] if read else None}
    )


def import_agents(engine: Engine, docs: list[tuple[AgentExport, str]], *, model_id: str) -> list[ImportReport]:
    """Restore exported agents (each under the name given, validated by the caller): all of them or
    none. Everything is validated and embedded first; the writes are one store transaction; the
    indexes catch up after it commits. Refuses names that exist here or repeat (AgentExistsError)."""
    names = [name for _, name in docs]
    existing = set(engine.store.agents())
    taken = sorted({n for n in names if n in existing or names.count(n) > 1})
    if taken:
        raise AgentExistsError(
            f"agent(s) {', '.join(map(repr, taken))} already exist here (or twice in the "
            "import); delete them or import under another name"
        )
    ready = [_ready(engine, model_id, doc, name) for doc, name in docs]
    with engine.store.transaction():
        if set(engine.store.agents()) & set(names):  # created by someone else while this one was embedding
            raise AgentExistsError("an agent of this import was created meanwhile; nothing was imported")
        for agent in ready:
            _write(engine, agent)
    for agent in ready:
        for tier, rows in ((Tier.ARCHIVAL, agent.passages), (Tier.RECALL, agent.messages)):
            if rows:
                engine.tier_index(agent.name, tier)  # catches up with the committed records
    return [
        ImportReport(agent=a.name, passages=len(a.doc.passages), messages=len(a.doc.messages), reembedded=a.reembedded)
        for a in ready
    ]
