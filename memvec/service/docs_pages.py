"""The API's docs pages (/docs, Swagger UI; /redoc, ReDoc) from files that ship in a package.

FastAPI's own pages load their scripts from a CDN at an unpinned version, into the server's origin:
whoever serves that script could act for anyone who opens /docs while signed in to the browser. Here
the scripts come from the `fastapi-offline` package (fixed by its version, served under /docs/static),
and each page carries a Content-Security-Policy that allows only this server's own files, its
OpenAPI document, and the page's one inline script by its hash: nothing is fetched from elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from fastapi import HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from memvec.service.deps import api_router

STATIC_PREFIX = "/docs/static"
_FILES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}


def static_directory() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def _with_policy(page: HTMLResponse) -> HTMLResponse:
    """The page with a CSP naming each of its inline scripts by hash (no other inline code runs)."""
    body = bytes(page.body).decode()
    hashes = [
        base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        for script in re.findall(r"<script>(.*?)</script>", body, flags=re.S)
    ]
    scripts = " ".join(f"'sha256-{h}'" for h in hashes)
    policy = (
        f"default-src 'none'; script-src 'self' {scripts}; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return HTMLResponse(body, headers={"Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff"})


router = api_router(include_in_schema=False)


# /docs, /redoc and their files; the app must be made with docs_url=None and redoc_url=None
@router.get("/docs", include_in_schema=False)
def swagger(request: Request) -> HTMLResponse:
    return _with_policy(
        get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{request.app.title} - API docs",
            swagger_js_url=f"{STATIC_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_PREFIX}/favicon.png",
        )
    )


@router.get("/redoc", include_in_schema=False)
def redoc(request: Request) -> HTMLResponse:
    return _with_policy(
        get_redoc_html(
            openapi_url="/openapi.json",
            title=f"{request.app.title} - API reference",
            redoc_js_url=f"{STATIC_PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{STATIC_PREFIX}/favicon.png",
            with_google_fonts=False,
        )
    )


@router.get(STATIC_PREFIX + "/{name}", include_in_schema=False)
def static_file(name: str) -> FileResponse:
    if name not in _FILES:
        raise HTTPException(404, f"no docs file {name!r}")
    return FileResponse(
        static_directory() / name,
        media_type=_FILES[name],
        headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"},
    )
