"""HTML for the memory browser: Jinja2 templates with autoescaping, and the headers every page gets.

Text from memory is always escaped by the templates; the Content-Security-Policy allows no script at
all and styles only from the server's own stylesheet, so even markup that slipped through could not
run or fetch anything. Bars (scores, a block's use of its limit) are `<meter>` elements, which need
no inline style.
"""

from __future__ import annotations

from datetime import datetime
from importlib import resources
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from memvec.service.ui.session import SESSION_COOKIE, SESSION_SECONDS, Viewer, set_cookie

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",  # pages show memory that may be forgotten; never keep them in a cache
}
PACKAGE = resources.files("memvec.service.ui")
TEMPLATES = PACKAGE / "templates"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else ""


def _number(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        undefined=StrictUndefined,
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["number"] = _number
    return env


ENVIRONMENT = _environment()


def page(request: Request, viewer: Viewer | None, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """A rendered page with the browser's security headers (and the session cookie, when new)."""
    html = ENVIRONMENT.get_template(template).render(viewer=viewer, path=request.url.path, **context)
    response = HTMLResponse(html, status_code=status, headers=PAGE_HEADERS)
    if viewer is not None and viewer.new_cookie:
        set_cookie(response, request, SESSION_COOKIE, viewer.new_cookie, SESSION_SECONDS)
    return response
