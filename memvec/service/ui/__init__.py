"""The memory browser: server-rendered pages under /ui on the same keys as the API (`memvec serve`).

Pages: sign-in, agents (create, import, export), an agent's blocks (edit, history), its recall
timeline and archival passages (versions, delete), search with each hit's score parts, consolidation
runs, and health (verify). No script: plain forms, each carrying its CSRF token.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.requests import cookie_parser

from memvec.service.auth import KeyRing
from memvec.service.deps import api_router
from memvec.service.ui import (
    pages_agent,
    pages_agents,
    pages_documents,
    pages_health,
    pages_records,
    pages_search,
    pages_session,
)
from memvec.service.ui.render import PACKAGE, PAGE_HEADERS, page
from memvec.service.ui.session import SESSION_COOKIE, CsrfRefused, SignInRequired, read

STYLESHEET = (PACKAGE / "static" / "ui.css").read_bytes()


def is_ui_path(path: str) -> bool:
    """A page of the browser: it checks its own session cookie (the API's key gate lets it through)."""
    return path == "/ui" or path.startswith("/ui/")


def has_session(keys: KeyRing, cookies: str | None) -> bool:
    """Whether a Cookie header carries a valid session of the browser (checked before any body is read)."""
    return read(keys, cookie_parser(cookies or "").get(SESSION_COOKIE)) is not None


def is_ui(request: Request) -> bool:
    return is_ui_path(request.url.path)


def error_page(request: Request, status: int, kind: str, detail: Any) -> HTMLResponse:
    """An error as a page of the browser (the API answers the same errors as JSON)."""
    viewer = read(request.app.state.service.keys, request.cookies.get(SESSION_COOKIE))
    message = (
        "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if isinstance(e, dict) and "loc" in e else str(e)
            for e in detail
        )
        if isinstance(detail, list)
        else str(detail)
    )
    return page(request, viewer, "error.html", status=status, status_code=status, kind=kind, message=message)


async def sign_in_first(request: Request, _: Exception) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.method != "GET":
        target = "/ui/agents"
    return RedirectResponse(f"/ui/login?next={quote(target, safe='')}", status_code=303)


async def csrf_refused(request: Request, _: Exception) -> Response:
    return error_page(
        request,
        403,
        "csrf_refused",
        "This form came without its session's token, so nothing was changed. Reload the page and try again.",
    )


router = api_router(include_in_schema=False)


@router.get("/ui/static/ui.css", include_in_schema=False)
def stylesheet() -> Response:
    return Response(
        STYLESHEET, media_type="text/css", headers={**PAGE_HEADERS, "Cache-Control": "public, max-age=3600"}
    )


PAGES = (
    pages_session.router,
    pages_agents.router,
    pages_agent.router,
    pages_records.router,
    pages_documents.router,
    pages_search.router,
    pages_health.router,
)


def install(app: FastAPI) -> None:
    """The browser's two redirects for errors of its own (sign in first; a form without its token)."""
    app.add_exception_handler(SignInRequired, sign_in_first)
    app.add_exception_handler(CsrfRefused, csrf_refused)
