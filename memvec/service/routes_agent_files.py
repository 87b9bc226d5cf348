"""The files an agent sees of its folders (Letta's `/v1/agents/{id}/files`): every file of every
attached folder, which are open, and what the agent's prompt shows of each. Opening one past the
agent's `max_files_open` closes the least recently opened (their names come back)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path, Query

from memvec.service.deps import Caller, ScopedAgent, Service, api_router, visible_agent
from memvec.service.file_bodies import AgentFileOut, AgentFilesPage, ClosedFile
from memvec.service.views import page

router = api_router(tags=["agents"])
FileId = Annotated[str, Path(pattern=r"^file-[0-9]{1,18}$", description="a file's id (file-<n>)")]


def _document_id(file_id: str) -> int:
    return int(file_id.removeprefix("file-"))


@router.get("/v1/agents/{agent_id}/files", response_model=AgentFilesPage)
def list_agent_files(
    agent_id: ScopedAgent,
    principal: Caller,
    service: Service,
    is_open: Annotated[bool | None, Query(description="only open (true) or closed (false) files")] = None,
    after: Annotated[str | None, Query(max_length=140, description="cursor: files after this file id")] = None,
    before: Annotated[str | None, Query(max_length=140, description="cursor: files before this file id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Annotated[Literal["asc", "desc"], Query(description="by upload time")] = "asc",
) -> AgentFilesPage:
    visible_agent(agent_id, principal, service)
    views = [v for v in service.memory.open_files(agent_id).list() if is_open is None or v.is_open == is_open]
    files = [AgentFileOut.of(v) for v in (views[::-1] if order == "desc" else views)]
    ids = [f.file_id for f in files]
    chosen = page(ids, after=after, before=before, limit=limit)
    shown = files[chosen]
    more = chosen.stop < len(files)
    return AgentFilesPage(files=shown, next_cursor=shown[-1].file_id if shown and more else None, has_more=more)


@router.patch("/v1/agents/{agent_id}/files/close-all", response_model=list[str])
def close_all_files(agent_id: ScopedAgent, principal: Caller, service: Service) -> list[str]:
    """Close every open file; returns their names (`<folder>/<file>`)."""
    visible_agent(agent_id, principal, service)
    return service.memory.open_files(agent_id).close_all()


@router.patch("/v1/agents/{agent_id}/files/{file_id}/open", response_model=list[str])
def open_file(agent_id: ScopedAgent, file_id: FileId, principal: Caller, service: Service) -> list[str]:
    """Open a file whole; returns the names of the files closed to keep within `max_files_open`."""
    visible_agent(agent_id, principal, service)
    return service.memory.open_files(agent_id).open(_document_id(file_id))


@router.patch("/v1/agents/{agent_id}/files/{file_id}/close", response_model=ClosedFile)
def close_file(agent_id: ScopedAgent, file_id: FileId, principal: Caller, service: Service) -> ClosedFile:
    visible_agent(agent_id, principal, service)
    service.memory.open_files(agent_id).close(_document_id(file_id))
    return ClosedFile(message=f"{file_id} closed for {agent_id}")
