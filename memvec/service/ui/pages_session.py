"""Signing in and out of the memory browser (see memvec.service.ui.session)."""

from __future__ import annotations

import hmac
import secrets
from datetime import UTC, datetime
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memvec.service.deps import Service, api_router
from memvec.service.ui.deps import CsrfField, PageViewer
from memvec.service.ui.render import page
from memvec.service.ui.session import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    SESSION_SECONDS,
    check_csrf,
    clear_cookie,
    issue,
    set_cookie,
)

router = api_router(include_in_schema=False)

LOGIN_SECONDS = 600
NextPage = Annotated[str, Query(max_length=2048, alias="next")]


def _local(target: str) -> str:
    """Only a path of this browser (never another site: no open redirect)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/ui") or target.startswith("//"):
        return "/ui/agents"
    return target


def _sign_in_page(request: Request, next_page: str, *, error: str = "", status: int = 200) -> HTMLResponse:
    nonce = secrets.token_urlsafe(18)
    response = page(
        request, None, "login.html", status=status, login_token=nonce, next_page=_local(next_page), error=error
    )
    set_cookie(response, request, LOGIN_COOKIE, nonce, LOGIN_SECONDS)
    return response


@router.get("/", include_in_schema=False)
def home() -> RedirectResponse:
    return RedirectResponse("/ui/agents", status_code=303)


@router.get("/ui", include_in_schema=False)
def ui_home() -> RedirectResponse:
    return RedirectResponse("/ui/agents", status_code=303)


@router.get("/ui/login", include_in_schema=False)
def sign_in_form(request: Request, service: Service, next_page: NextPage = "/ui/agents") -> Response:
    if service.keys.open:
        return RedirectResponse(_local(next_page), status_code=303)
    return _sign_in_page(request, next_page)


@router.post("/ui/login", include_in_schema=False)
def sign_in(
    request: Request,
    service: Service,
    api_key: Annotated[str, Form(max_length=4096)] = "",
    login_token: Annotated[str, Form(max_length=64)] = "",
    next_page: Annotated[str, Form(max_length=2048)] = "/ui/agents",
) -> Response:
    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not expected or not hmac.compare_digest(expected, login_token):
        return _sign_in_page(request, next_page, error="The sign-in form expired; please try again.", status=403)
    if service.keys.open or service.keys.principal(api_key.strip()) is None:
        return _sign_in_page(request, next_page, error="That API key is not valid here.", status=401)
    response = RedirectResponse(_local(next_page), status_code=303)
    set_cookie(response, request, SESSION_COOKIE, issue(api_key.strip()), SESSION_SECONDS)
    clear_cookie(response, request, LOGIN_COOKIE)
    return response


@router.post("/ui/logout", include_in_schema=False)
def sign_out(request: Request, viewer: PageViewer, service: Service, csrf_token: CsrfField = None) -> Response:
    check_csrf(viewer, csrf_token)
    if viewer.nonce:  # on every server of the store: a copied cookie no longer works either
        service.memory.revoke_session(viewer.nonce, datetime.fromtimestamp(viewer.expires, UTC))
    response = RedirectResponse("/ui/login", status_code=303)
    clear_cookie(response, request, SESSION_COOKIE)
    return response
