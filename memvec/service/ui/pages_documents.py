"""An agent's files: its own documents and those of the folders attached to it, each with its
status, size and versions; a document's chunks with their pages, offsets and heading paths."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request
from fastapi.responses import HTMLResponse

from memvec.service.deps import Service, api_router
from memvec.service.ui.deps import PageAgent, PageViewer, seen_agent
from memvec.service.ui.render import page
from memvec.types import MAX_ID

router = api_router(include_in_schema=False)

DocumentId = Annotated[int, Path(ge=1, le=MAX_ID)]


@router.get("/ui/agents/{agent_id}/documents", include_in_schema=False)
def documents_page(request: Request, agent_id: PageAgent, viewer: PageViewer, service: Service) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    memory = service.memory
    own = memory.documents(agent_id).list(include_replaced=True)
    folders = [(folder, memory.folders().files(folder.id)) for folder in memory.folders().of_agent(agent_id)]
    return page(
        request,
        viewer,
        "documents.html",
        agent_id=agent_id,
        own=[d for d in own if d.replaced_by is None],
        replaced=[d for d in own if d.replaced_by],
        folders=folders,
    )


@router.get("/ui/agents/{agent_id}/documents/{document_id}", include_in_schema=False)
def document_page(
    request: Request, agent_id: PageAgent, document_id: DocumentId, viewer: PageViewer, service: Service
) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    documents = service.memory.documents(agent_id)
    return page(
        request,
        viewer,
        "document.html",
        agent_id=agent_id,
        document=documents.get(document_id),
        chunks=documents.chunks(document_id),
    )
