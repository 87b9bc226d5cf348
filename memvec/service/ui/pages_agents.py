"""The agents page: each agent the key may see with its record counts, blocks, model and last
activity; create, import (upload) and export (download)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import File, Form, HTTPException, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from memvec.exchange.agentfile import import_document, parse_document, read_document
from memvec.memory import Memory
from memvec.service.deps import Service, api_router, may_import
from memvec.service.ui.deps import CsrfField, PageAgent, PageNumber, PageViewer, Paging, seen_agent
from memvec.service.ui.render import page
from memvec.service.ui.session import check_csrf
from memvec.types import AGENT_PATTERN, AgentSettings

router = api_router(include_in_schema=False)


@dataclass(frozen=True)
class AgentRow:
    name: str
    model: str | None
    archival: int
    recall: int
    blocks: list[str]
    last_activity: datetime | None


def agent_row(memory: Memory, settings: AgentSettings) -> AgentRow:
    name = settings.name
    newest = [
        r.created_at
        for tier in (memory.recall(name), memory.archival(name))
        for r in tier.list(limit=1, newest_first=True)
    ]
    return AgentRow(
        name=name,
        model=settings.model,
        archival=memory.archival(name).count(),
        recall=memory.recall(name).count(),
        blocks=[b.label for b in memory.core(name).blocks()],
        last_activity=max(newest, default=None),
    )


@router.get("/ui/agents", include_in_schema=False)
def agents_page(
    request: Request,
    viewer: PageViewer,
    service: Service,
    page_number: PageNumber = 1,
) -> HTMLResponse:
    paging = Paging(page_number)
    names = [n for n in service.memory.agents() if viewer.principal.may_see(n)]
    shown, paging = paging.trimmed(names[paging.offset : paging.offset + paging.fetch])
    rows = [agent_row(service.memory, seen_agent(n, viewer, service)[0]) for n in shown]
    return page(
        request,
        viewer,
        "agents.html",
        rows=rows,
        paging=paging,
        total=len(names),
        agent_pattern=AGENT_PATTERN.strip("^$"),
    )


@router.post("/ui/agents", include_in_schema=False)
def create_agent(
    viewer: PageViewer,
    service: Service,
    csrf_token: CsrfField = None,
    name: Annotated[str, Form(max_length=64)] = "",
    model: Annotated[str, Form(max_length=256)] = "",
) -> Response:
    check_csrf(viewer, csrf_token)
    settings = AgentSettings.model_validate({"name": name.strip(), "model": model.strip() or None})
    if not viewer.principal.may_see(settings.name):
        raise HTTPException(403, f"this key may not create agent {settings.name!r}")
    service.memory.create_agent(settings, actor=viewer.principal.actor)
    return RedirectResponse(f"/ui/agents/{settings.name}", status_code=303)


@router.post("/ui/agents/import", include_in_schema=False)
async def import_agent(
    viewer: PageViewer,
    service: Service,
    file: Annotated[UploadFile, File()],
    csrf_token: CsrfField = None,
    name: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    check_csrf(viewer, csrf_token)
    raw = await file.read()
    plan = await run_in_threadpool(
        lambda: read_document(parse_document(raw, what="the uploaded file"), name=name.strip() or None)
    )  # off the event loop
    await run_in_threadpool(may_import, viewer.principal, service.memory, plan)
    report = await run_in_threadpool(import_document, service.memory, plan)
    first = report.agent_ids[0] if report.agent_ids else None
    return RedirectResponse(f"/ui/agents/{first}" if first else "/ui/agents", status_code=303)


@router.get("/ui/agents/{agent_id}/export", include_in_schema=False)
def export_agent(agent_id: PageAgent, viewer: PageViewer, service: Service) -> Response:
    seen_agent(agent_id, viewer, service)
    document = service.memory.export_agent(agent_id, with_embeddings=True)
    body = json.dumps(document.model_dump(mode="json"), ensure_ascii=False)
    return Response(
        body,
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{agent_id}.memvec.json"', "Cache-Control": "no-store"},
    )
