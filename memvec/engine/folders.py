"""Folders: documents owned by the folder (`~<folder id>`), whose chunks every attached agent holds a
copy of in its archival tier. Attaching cuts and embeds the folder's current documents for the agent;
detaching deletes the agent's copies; deleting the folder deletes its documents from every agent."""

from __future__ import annotations

from memvec.engine.documents import (
    FOLDER_OWNER_PREFIX,
    Chunked,
    chunked,
    delete_documents,
    saved_without,
    stored_document,
    write_chunks,
)
from memvec.engine.engine import Engine
from memvec.errors import NotFoundError
from memvec.types import Document, Folder, Tier


def folder_owner(folder_id: str) -> str:
    return FOLDER_OWNER_PREFIX + folder_id


def folder_of(engine: Engine, folder_id: str) -> Folder:
    folder = engine.store.folder(folder_id)
    if folder is None:
        raise NotFoundError(f"no folder {folder_id!r}")
    return folder


def attach(engine: Engine, folder_id: str, agent: str) -> bool:
    """Attach the folder to the agent, copying its documents' chunks in (False: it was attached)."""
    folder = folder_of(engine, folder_id)
    if agent in folder.agents:
        return False
    cut: dict[int, tuple[Document, Chunked]] = {}
    for document in engine.store.documents(folder_owner(folder_id)):
        cut[document.id] = (document, chunked(engine, stored_document(engine, document)))
    now = engine.store.clock()
    with engine.store.transaction():
        folder_of(engine, folder_id)  # not deleted meanwhile: no attachment outlives its folder
        if not engine.store.attach_folder(folder_id, agent, now):
            return False
        for document in engine.store.documents(folder_owner(folder_id)):  # one uploaded meanwhile too
            if document.id not in cut:
                cut[document.id] = (document, chunked(engine, stored_document(engine, document)))
            write_chunks(engine, agent, document, cut[document.id][1], folder=folder.name, tags=(), at=now)
    engine.tier_index(agent, Tier.ARCHIVAL)
    return True


def detach(engine: Engine, folder_id: str, agent: str) -> int:
    """Detach the folder from the agent and delete the agent's copies of its chunks (every version);
    returns how many."""
    folder_of(engine, folder_id)
    with engine.store.transaction():
        versions = [d.id for d in engine.store.documents(folder_owner(folder_id), include_replaced=True)]
        ids = engine.store.chunk_ids(versions).get(agent, [])
        engine.store.detach_folder(folder_id, agent)
        deleted = engine.store.delete_many(agent, ids)
        engine.store.forget_in_runs(agent, ids)
    saved_without(engine, [agent])
    return deleted


def delete(engine: Engine, folder_id: str) -> int:
    """Delete the folder, its documents and every agent's copies of their chunks; returns how many."""
    folder_of(engine, folder_id)
    with engine.store.transaction():  # a file uploaded meanwhile is read here, or finds no folder
        versions = [d.id for d in engine.store.documents(folder_owner(folder_id), include_replaced=True)]
        deleted, agents = delete_documents(engine, versions)
        engine.store.delete_folder_row(folder_id)
    saved_without(engine, agents)
    return deleted
