"""Health: the store, the model, loaded indexes against the budget, each tier's saved index against
the store's change log, and a verify button (the agents the viewer's key may see, a page at a time)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from memvec.embed import backend_of, split_model_id
from memvec.errors import StoreUnavailableError
from memvec.exchange.reports import VerifyReport
from memvec.memory import Memory
from memvec.service.deps import Service, api_router
from memvec.service.ui.deps import CsrfField, PageNumber, PageViewer, Paging
from memvec.service.ui.render import page
from memvec.service.ui.session import Viewer, check_csrf

router = api_router(include_in_schema=False)

# each agent's tier rows read its saved manifests from disk (~1 ms an agent): 20 keep a page fast
AGENTS_PER_PAGE = 20


def _visible_agents(memory: Memory, viewer: Viewer) -> list[str]:
    return [name for name in memory.agents() if viewer.principal.may_see(name)]


def _model(memory: Memory) -> dict[str, str]:
    """The embedding model's name and the backend that computes it (none for a registered fake)."""
    return {"name": split_model_id(memory.model_id)[1], "backend": backend_of(memory.model_id) or "built in"}


def _health_page(
    request: Request, viewer: Viewer, memory: Memory, paging: Paging, report: VerifyReport | None = None
) -> HTMLResponse:
    model = _model(memory)
    try:
        agents = _visible_agents(memory, viewer)
    except StoreUnavailableError as exc:
        return page(
            request,
            viewer,
            "health.html",
            status=503,
            store_ok=False,
            store_error=str(exc),
            memory=memory,
            model=model,
            usage=memory.index_usage(),
            tiers=[],
            paging=paging,
            report=None,
            agents=0,
        )
    shown, paging = paging.trimmed(agents[paging.offset : paging.offset + paging.fetch])
    return page(
        request,
        viewer,
        "health.html",
        store_ok=True,
        store_error="",
        memory=memory,
        model=model,
        usage=memory.index_usage(),
        tiers=memory.partition_stats(set(shown)),
        paging=paging,
        report=report,
        agents=len(agents),
    )


@router.get("/ui/health", include_in_schema=False)
def health_page(request: Request, viewer: PageViewer, service: Service, page_number: PageNumber = 1) -> HTMLResponse:
    return _health_page(request, viewer, service.memory, Paging(page_number, AGENTS_PER_PAGE))


@router.post("/ui/health/verify", include_in_schema=False)
def verify(request: Request, viewer: PageViewer, service: Service, csrf_token: CsrfField = None) -> HTMLResponse:
    """Check the saved indexes of every agent the key may see against the store."""
    check_csrf(viewer, csrf_token)
    memory = service.memory
    if viewer.principal.agents is None:
        report = memory.verify()
    else:
        report = VerifyReport(problems=[], behind=[])
        for name in _visible_agents(memory, viewer):
            found = memory.verify(agent=name)
            report.problems += found.problems
            report.behind += found.behind
    return _health_page(request, viewer, memory, Paging(1, AGENTS_PER_PAGE), report)
