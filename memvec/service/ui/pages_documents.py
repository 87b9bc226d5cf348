"""An agent's files: its own documents and those of the folders attached to it, each with its
status, size and versions; a document's chunks with their pages, offsets and heading paths."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Path, Request
from fastapi.responses import HTMLResponse

from memvec.service.deps import AgentId, Service
from memvec.service.ui.deps import PageViewer, seen_agent
from memvec.service.ui.render import page

DocumentId = Annotated[int, Path(ge=1, le=2**62)]


def add_routes(app: FastAPI) -> None:
    @app.get("/ui/agents/{agent_id}/documents", include_in_schema=False)
    def documents_page(request: Request, agent_id: AgentId, viewer: PageViewer, service: Service) -> HTMLResponse:
        seen_agent(agent_id, viewer, service)
        memory = service.memory
        own = memory.documents(agent_id).list(include_replaced=True)
        folders = [(folder, memory.folders().files(folder.id)) for folder in memory.folders().of_agent(agent_id)]
        return page(request, viewer, "documents.html", agent_id=agent_id,
                    own=[d for d in own if d.replaced_by is None], replaced=[d for d in own if d.replaced_by],
                    folders=folders)

    @app.get("/ui/agents/{agent_id}/documents/{document_id}", include_in_schema=False)
    def document_page(request: Request, agent_id: AgentId, document_id: DocumentId, viewer: PageViewer,
                      service: Service) -> HTMLResponse:
        seen_agent(agent_id, viewer, service)
        documents = service.memory.documents(agent_id)
        return page(request, viewer, "document.html", agent_id=agent_id, document=documents.get(document_id),
                    chunks=documents.chunks(document_id))
