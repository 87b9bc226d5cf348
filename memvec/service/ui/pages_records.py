"""An agent's records: the recall tier as a timeline grouped by session, archival passages with tags,
filters and paging, a passage's versions, and deleting a passage (after a confirmation page)."""

from __future__ import annotations

import itertools
from typing import Annotated

from fastapi import Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memvec.service.deps import Service, api_router
from memvec.service.ui.deps import CsrfField, PageAgent, PageNumber, PageViewer, Paging, seen_agent
from memvec.service.ui.render import page
from memvec.service.ui.session import check_csrf
from memvec.types import MAX_ID, Record, Tag

router = api_router(include_in_schema=False)

PassageId = Annotated[int, Path(ge=1, le=MAX_ID)]
TagFilter = Annotated[Tag | None, Query()]


def by_session(records: list[Record]) -> list[tuple[str | None, list[Record]]]:
    """Consecutive records of one session together (a timeline keeps time order across sessions)."""
    return [(session, list(group)) for session, group in itertools.groupby(records, lambda r: r.citation.session_id)]


@router.get("/ui/agents/{agent_id}/recall", include_in_schema=False)
def recall_page(
    request: Request, agent_id: PageAgent, viewer: PageViewer, service: Service, page_number: PageNumber = 1
) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    paging = Paging(page_number)
    recall = service.memory.recall(agent_id)
    found, paging = paging.trimmed(recall.list(limit=paging.fetch, offset=paging.offset))
    return page(
        request, viewer, "recall.html", agent_id=agent_id, groups=by_session(found), paging=paging, total=recall.count()
    )


@router.get("/ui/agents/{agent_id}/archival", include_in_schema=False)
def archival_page(
    request: Request,
    agent_id: PageAgent,
    viewer: PageViewer,
    service: Service,
    page_number: PageNumber = 1,
    tag: TagFilter = None,
    order: Annotated[str, Query(pattern="^(newest|oldest)$")] = "newest",
) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    paging = Paging(page_number)
    archival = service.memory.archival(agent_id)
    found, paging = paging.trimmed(
        archival.list(
            limit=paging.fetch, offset=paging.offset, newest_first=order == "newest", tags=[tag] if tag else []
        )
    )
    return page(
        request,
        viewer,
        "archival.html",
        agent_id=agent_id,
        passages=found,
        paging=paging,
        tag=tag,
        order=order,
        total=archival.count(),
    )


@router.get("/ui/agents/{agent_id}/archival/{passage_id}", include_in_schema=False)
def passage_page(
    request: Request, agent_id: PageAgent, passage_id: PassageId, viewer: PageViewer, service: Service
) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    archival = service.memory.archival(agent_id)
    passage = archival.get(passage_id)
    return page(
        request, viewer, "passage.html", agent_id=agent_id, passage=passage, versions=archival.history(passage_id)[::-1]
    )


@router.get("/ui/agents/{agent_id}/archival/{passage_id}/delete", include_in_schema=False)
def confirm_delete(
    request: Request, agent_id: PageAgent, passage_id: PassageId, viewer: PageViewer, service: Service
) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    archival = service.memory.archival(agent_id)
    return page(
        request,
        viewer,
        "delete.html",
        agent_id=agent_id,
        passage=archival.get(passage_id),
        versions=len(archival.history(passage_id)),
    )


@router.post("/ui/agents/{agent_id}/archival/{passage_id}/delete", include_in_schema=False)
def delete_passage(
    agent_id: PageAgent, passage_id: PassageId, viewer: PageViewer, service: Service, csrf_token: CsrfField = None
) -> Response:
    check_csrf(viewer, csrf_token)
    seen_agent(agent_id, viewer, service)
    service.memory.archival(agent_id).delete(passage_id)
    return RedirectResponse(f"/ui/agents/{agent_id}/archival", status_code=303)
