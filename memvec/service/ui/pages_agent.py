"""One agent: its core blocks (editable, with their limit meters), block history and consolidation
runs as diffs."""

from __future__ import annotations

import difflib
from typing import Annotated

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memvec.service.deps import Service, api_router
from memvec.service.ui.deps import CsrfField, PageAgent, PageViewer, seen_agent
from memvec.service.ui.pages_agents import agent_row
from memvec.service.ui.render import page
from memvec.service.ui.session import check_csrf
from memvec.types import LABEL_PATTERN, MAX_TEXT_CHARS

router = api_router(include_in_schema=False)

Label = Annotated[str, Path(pattern=LABEL_PATTERN)]
HISTORY_SHOWN = 100


def diff_lines(old: str, new: str) -> list[tuple[str, str]]:
    """(kind, line) of a line diff: kind is '+', '-' or ' ' (context)."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2)
    return [(line[0], line[1:]) for line in list(lines)[2:] if line[:1] in "+- "]


@router.get("/ui/agents/{agent_id}", include_in_schema=False)
def agent_page(request: Request, agent_id: PageAgent, viewer: PageViewer, service: Service) -> HTMLResponse:
    settings, state = seen_agent(agent_id, viewer, service)
    memory = service.memory
    return page(
        request,
        viewer,
        "agent.html",
        agent=settings,
        state=state,
        row=agent_row(memory, settings),
        blocks=memory.core(agent_id).blocks(),
        shared=memory.core(agent_id).shared_ids(),
        runs=len(memory.consolidation_runs(agent_id)),
    )


@router.post("/ui/agents/{agent_id}/blocks/{label}", include_in_schema=False)
def edit_block(
    agent_id: PageAgent,
    label: Label,
    viewer: PageViewer,
    service: Service,
    csrf_token: CsrfField = None,
    value: Annotated[str, Form(max_length=MAX_TEXT_CHARS)] = "",
) -> Response:
    check_csrf(viewer, csrf_token)
    seen_agent(agent_id, viewer, service)
    # browsers send CRLF line breaks from a textarea; the block keeps what the user typed
    service.memory.core(agent_id, actor=viewer.principal.actor).rewrite(label, value.replace("\r\n", "\n"))
    return RedirectResponse(f"/ui/agents/{agent_id}#block-{label}", status_code=303)


@router.get("/ui/agents/{agent_id}/blocks/{label}/history", include_in_schema=False)
def block_history(
    request: Request, agent_id: PageAgent, label: Label, viewer: PageViewer, service: Service
) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    changes = service.memory.core(agent_id).history(label)[-HISTORY_SHOWN:][::-1]
    diffs = [diff_lines(c.old.value if c.old else "", c.new.value if c.new else "") for c in changes]
    return page(
        request,
        viewer,
        "block_history.html",
        agent_id=agent_id,
        label=label,
        changes=list(zip(changes, diffs, strict=True)),
    )


@router.get("/ui/agents/{agent_id}/consolidations", include_in_schema=False)
def consolidations(request: Request, agent_id: PageAgent, viewer: PageViewer, service: Service) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    runs = service.memory.consolidation_runs(agent_id)[::-1]
    block_diffs = {(run.id, b.seq): diff_lines(b.old, b.new) for run in runs for b in run.blocks}
    return page(request, viewer, "consolidations.html", agent_id=agent_id, runs=runs, block_diffs=block_diffs)
