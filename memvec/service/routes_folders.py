"""Folders in Letta's shapes (`/v1/folders`, `/v1/agents/{id}/folders`): files uploaded into a folder are
parsed, cut into chunks and embedded at once (a file's `processing_status` is `completed` when the
upload answers), and every agent the folder is attached to holds the chunks in its archival memory,
citing the file, page and offsets. The home's one model embeds every folder: a folder's `embedding`
settings are accepted and not used.

A scoped key sees the folders attached to its agents and may attach those to its agents; creating,
changing or deleting a folder and uploading or deleting its files need an unscoped key (a folder may
be shared by several tenants' agents)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import File, Path, Query, UploadFile
from pydantic import BaseModel, Field

from memvec.documents.formats import MAX_DOCUMENT_BYTES
from memvec.errors import NotFoundError
from memvec.memory import Memory
from memvec.service.auth import Principal
from memvec.service.deps import Caller, ScopedAgent, Service, api_router, unscoped, visible_agent
from memvec.service.schemas import AgentOut, Deleted, FolderOut
from memvec.service.views import agent_out, folder_out, page
from memvec.types import FOLDER_ID_PATTERN, Document, Folder, Metadata

router = api_router(tags=["folders"])
FolderId = Annotated[str, Path(pattern=FOLDER_ID_PATTERN, description="a folder's id (source-<uuid4>)")]
FileId = Annotated[str, Path(pattern=r"^file-[0-9]{1,18}$", description="a file's id (file-<n>)")]
After = Annotated[str | None, Query(max_length=140, description="cursor: items after this id")]
Before = Annotated[str | None, Query(max_length=140, description="cursor: items before this id")]
Limit = Annotated[int, Query(ge=1, le=1000)]


class FolderIn(BaseModel):
    name: str = Field(min_length=1, max_length=2048)
    description: str | None = Field(default=None, max_length=2048)
    instructions: str | None = Field(default=None, max_length=2048)
    metadata: Metadata | None = None
    embedding: str | None = Field(default=None, max_length=256, description="accepted; the home's model embeds")
    embedding_chunk_size: int | None = Field(
        default=None, ge=1, le=100_000, description="accepted, not used: chunks fit the model's window"
    )
    embedding_config: dict[str, Any] | None = Field(default=None, description="accepted, not used")


class FolderPatch(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=2048)
    description: str | None = Field(default=None, max_length=2048)
    instructions: str | None = Field(default=None, max_length=2048)
    metadata: Metadata | None = None


class FileOut(BaseModel):
    """Letta's FileMetadata."""

    id: str
    source_id: str
    folder_id: str
    file_name: str
    original_file_name: str
    file_type: str
    file_size: int
    processing_status: Literal["completed"] = "completed"
    error_message: str | None = None
    total_chunks: int
    chunks_embedded: int
    content: str | None = Field(default=None, description="the file's text, with include_content")
    created_at: datetime
    updated_at: datetime


_WHY = "a folder may be attached to several tenants' agents"


def _file_out(folder_id: str, doc: Document, content: str | None = None) -> FileOut:
    return FileOut(
        id=f"file-{doc.id}",
        source_id=folder_id,
        folder_id=folder_id,
        file_name=doc.name,
        original_file_name=doc.original_name,
        file_type=doc.media_type,
        file_size=doc.size_bytes,
        total_chunks=doc.chunks,
        chunks_embedded=doc.chunks,
        content=content,
        created_at=doc.created_at,
        updated_at=doc.created_at,
    )


def _visible(memory: Memory, principal: Principal, folder_id: str) -> Folder:
    """The folder, or 404 when it does not exist or is attached to none of the caller's agents."""
    folder = memory.folders().get(folder_id)
    if principal.agents is not None and not principal.agents & set(folder.agents):
        raise NotFoundError(f"no folder {folder_id!r}")
    return folder


def _document_id(file_id: str) -> int:
    return int(file_id.removeprefix("file-"))


@router.post("/v1/folders", response_model=FolderOut, status_code=201)
def create_folder(body: FolderIn, principal: Caller, service: Service) -> FolderOut:
    """An empty folder (409 when another has the name)."""
    unscoped(principal, "creating a folder", _WHY)
    folder = service.memory.folders().create(
        body.name, description=body.description, instructions=body.instructions, metadata=body.metadata
    )
    return folder_out(service.memory, folder)


@router.get("/v1/folders", response_model=list[FolderOut])
def list_folders(
    principal: Caller, service: Service, after: After = None, before: Before = None, limit: Limit = 50
) -> list[FolderOut]:
    """The folders the caller can see (a scoped key: those attached to its agents), oldest first."""
    found = [f for f in service.memory.folders().list() if principal.agents is None or principal.agents & set(f.agents)]
    chosen = found[page([f.id for f in found], after=after, before=before, limit=limit)]
    return [folder_out(service.memory, f) for f in chosen]


@router.get("/v1/folders/{folder_id}", response_model=FolderOut)
def get_folder(folder_id: FolderId, principal: Caller, service: Service) -> FolderOut:
    return folder_out(service.memory, _visible(service.memory, principal, folder_id))


@router.patch("/v1/folders/{folder_id}", response_model=FolderOut)
def modify_folder(folder_id: FolderId, body: FolderPatch, principal: Caller, service: Service) -> FolderOut:
    """Change its name, description, instructions or metadata."""
    unscoped(principal, "changing a folder", _WHY)
    changed = service.memory.folders().modify(folder_id, body.model_dump(exclude_unset=True, exclude_none=True))
    return folder_out(service.memory, changed)


@router.delete("/v1/folders/{folder_id}", response_model=Deleted)
def delete_folder(folder_id: FolderId, principal: Caller, service: Service) -> Deleted:
    """Delete the folder, its files, and their chunks from every agent it is attached to."""
    unscoped(principal, "deleting a folder", _WHY)
    chunks = service.memory.folders().delete(folder_id)
    return Deleted(message=f"folder {folder_id} deleted with {chunks} chunks")


@router.post("/v1/folders/{folder_id}/upload", response_model=FileOut, status_code=201)
def upload_file(
    folder_id: FolderId,
    principal: Caller,
    service: Service,
    file: Annotated[
        UploadFile, File(description=f"plain text, Markdown, HTML or PDF, at most {MAX_DOCUMENT_BYTES:,} bytes")
    ],
    duplicate_handling: Annotated[
        Literal["replace", "skip", "error", "suffix"],
        Query(
            description="a file of the same name there already: add this one as `name_(1).ext` (the "
            "default, as Letta does), replace it (its old chunks stay as closed versions; the same "
            "content again changes nothing), skip this one, or error (400)"
        ),
    ] = "suffix",
    name: Annotated[
        str | None, Query(min_length=1, max_length=1024, description="the file's name instead of the uploaded one")
    ] = None,
) -> FileOut:
    """Add a file: parsed, cut into chunks and embedded before the answer (422 `unreadable_document`
    for an empty, corrupt or unreadable file; nothing is written then)."""
    unscoped(principal, "uploading a file", _WHY)
    data = file.file.read(MAX_DOCUMENT_BYTES + 1)
    report = service.memory.folders().upload(
        folder_id,
        name or file.filename or "upload",
        data,
        media_type=file.content_type,
        duplicate_handling=duplicate_handling,
    )
    return _file_out(folder_id, report.document)


@router.get("/v1/folders/{folder_id}/files", response_model=list[FileOut])
def list_files(
    folder_id: FolderId,
    principal: Caller,
    service: Service,
    after: After = None,
    before: Before = None,
    limit: Limit = 50,
    include_content: Annotated[bool, Query(description="with each file's text")] = False,
) -> list[FileOut]:
    _visible(service.memory, principal, folder_id)
    folders = service.memory.folders()
    files = folders.files(folder_id)
    chosen = files[page([f"file-{d.id}" for d in files], after=after, before=before, limit=limit)]
    return [_file_out(folder_id, d, folders.file_text(folder_id, d.id) if include_content else None) for d in chosen]


@router.get("/v1/folders/{folder_id}/files/{file_id}", response_model=FileOut)
@router.get(
    "/v1/sources/{folder_id}/files/{file_id}", response_model=FileOut, summary="Get File (Letta's sources path)"
)
def get_file(
    folder_id: FolderId,
    file_id: FileId,
    principal: Caller,
    service: Service,
    include_content: Annotated[bool, Query(description="with the file's text")] = False,
) -> FileOut:
    _visible(service.memory, principal, folder_id)
    folders = service.memory.folders()
    doc = folders.file(folder_id, _document_id(file_id))
    return _file_out(folder_id, doc, folders.file_text(folder_id, doc.id) if include_content else None)


@router.delete("/v1/folders/{folder_id}/{file_id}", status_code=204)
def delete_file(folder_id: FolderId, file_id: FileId, principal: Caller, service: Service) -> None:
    """Delete a file (every version) and its chunks from every agent the folder is attached to."""
    unscoped(principal, "deleting a file", _WHY)
    service.memory.folders().delete_file(folder_id, _document_id(file_id))


@router.get("/v1/folders/{folder_id}/agents", response_model=list[str])
def folder_agents(
    folder_id: FolderId,
    principal: Caller,
    service: Service,
    after: After = None,
    before: Before = None,
    limit: Limit = 50,
) -> list[str]:
    """The ids of the agents the folder is attached to (those the caller can see)."""
    memory = service.memory
    held = [memory.agent_identity(a).id for a in _visible(memory, principal, folder_id).agents if principal.may_see(a)]
    return held[page(held, after=after, before=before, limit=limit)]


@router.get("/v1/agents/{agent_id}/folders", response_model=list[FolderOut])
def agent_folders(
    agent_id: ScopedAgent,
    principal: Caller,
    service: Service,
    after: After = None,
    before: Before = None,
    limit: Limit = 50,
) -> list[FolderOut]:
    visible_agent(agent_id, principal, service)
    found = service.memory.folders().of_agent(agent_id)
    chosen = found[page([f.id for f in found], after=after, before=before, limit=limit)]
    return [folder_out(service.memory, f) for f in chosen]


@router.patch("/v1/agents/{agent_id}/folders/attach/{folder_id}", response_model=AgentOut)
def attach_folder(agent_id: ScopedAgent, folder_id: FolderId, principal: Caller, service: Service) -> AgentOut:
    """Attach a folder: its files' chunks are copied into the agent's archival memory before the answer."""
    settings, state = visible_agent(agent_id, principal, service)
    _visible(service.memory, principal, folder_id)
    service.memory.folders().attach(folder_id, agent_id)
    return agent_out(service.memory, settings, state)


@router.patch("/v1/agents/{agent_id}/folders/detach/{folder_id}", response_model=AgentOut)
def detach_folder(agent_id: ScopedAgent, folder_id: FolderId, principal: Caller, service: Service) -> AgentOut:
    """Detach a folder: the agent's copies of its chunks are deleted (the folder keeps its files)."""
    settings, state = visible_agent(agent_id, principal, service)
    _visible(service.memory, principal, folder_id)
    service.memory.folders().detach(folder_id, agent_id)
    return agent_out(service.memory, settings, state)
