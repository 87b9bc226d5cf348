"""Who is looking at the memory browser: a signed session cookie and the CSRF token of its forms.

Signing in posts an API key once; the browser then holds `memvec_session`, an HttpOnly,
SameSite=Strict cookie (Secure behind HTTPS) that names the key by its fingerprint and is signed
with a secret derived from the key itself. No session lives on the server, so every server that has
the same keys accepts it (several servers behind a router), and removing a key ends its sessions.
With no keys configured (an open server) the cookie still carries the nonce that forms need.

Every form that changes something carries `csrf_token`, an HMAC of the session's nonce that a page
of another site can neither read nor compute; the sign-in form, before any session exists, is
checked by double submit (the same random value in a cookie and in the form).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request, Response

from memvec.service.auth import KeyRing, Principal

SESSION_COOKIE = "memvec_session"
LOGIN_COOKIE = "memvec_login"
SESSION_SECONDS = 12 * 3600
COOKIE_PATH = "/ui"
_OPEN = "open"  # the fingerprint of an open server's sessions (no key to sign with: nothing to protect)


class SignInRequired(Exception):
    """The page needs a signed-in key (answered with a redirect to the sign-in page)."""


class CsrfRefused(Exception):
    """A form came without its session's CSRF token (answered 403, nothing changed)."""


@dataclass(frozen=True)
class Viewer:
    """The principal behind a page request, its forms' CSRF token, and a cookie to set if new."""

    principal: Principal
    csrf_token: str
    signed_in: bool
    new_cookie: str | None = None
    nonce: str = ""  # names the session (what signing out revokes)
    expires: int = 0


def fingerprint(key: str) -> str:
    return hashlib.sha256(b"memvec-ui-key\0" + key.encode()).hexdigest()[:32]


def _secret(key: str | None) -> bytes:
    return hashlib.sha256(b"memvec-ui-session\0" + (key or "").encode()).digest()


def _sign(secret: bytes, payload: str) -> str:
    digest = hmac.new(secret, payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def csrf_token(secret: bytes, nonce: str) -> str:
    return _sign(secret, f"csrf.{nonce}")


def issue(key: str | None, *, now: float | None = None) -> str:
    """A new session cookie value for a key (None: an open server)."""
    expires = int((now or time.time()) + SESSION_SECONDS)
    payload = f"v1.{secrets.token_urlsafe(18)}.{expires}.{fingerprint(key) if key else _OPEN}"
    return f"{payload}.{_sign(_secret(key), payload)}"


def _key_with_fingerprint(keys: KeyRing, wanted: str) -> str | None:
    for key in keys.keys:
        if hmac.compare_digest(fingerprint(key), wanted):
            return key
    return None


def read(keys: KeyRing, cookie: str | None, *, now: float | None = None) -> Viewer | None:
    """The viewer a session cookie stands for, or None when it is absent, forged, expired or its key
    was removed (or, on an open server, one from a server with keys)."""
    parts = (cookie or "").split(".")
    if len(parts) != 5:
        return None
    version, nonce, expires, owner, signature = parts
    # ASCII digits, a few: str.isdigit takes '²', and int() refuses more than 4,300 digits
    if version != "v1" or not re.fullmatch(r"[0-9]{1,12}", expires) or int(expires) < (now or time.time()):
        return None
    key = None if keys.open else _key_with_fingerprint(keys, owner)
    if (owner == _OPEN) != keys.open or (key is None and not keys.open):
        return None
    secret = _secret(key)
    if not hmac.compare_digest(_sign(secret, f"{version}.{nonce}.{expires}.{owner}"), signature):
        return None
    principal = keys.principal(key) if key else Principal()
    return Viewer(
        principal or Principal(frozenset()),
        csrf_token(secret, nonce),
        signed_in=key is not None,
        nonce=nonce,
        expires=int(expires),
    )


def viewer_of(request: Request, keys: KeyRing, revoked: Callable[[str], bool]) -> Viewer:
    """The page's viewer; an open server opens a session on the first visit, a server with keys
    sends the browser to sign in (SignInRequired). `revoked`: whether a session was signed out."""
    found = read(keys, request.cookies.get(SESSION_COOKIE))
    if found is not None and not revoked(found.nonce):
        return found
    if not keys.open:
        raise SignInRequired()
    cookie = issue(None)
    fresh = read(keys, cookie)
    assert fresh is not None  # just issued
    return Viewer(fresh.principal, fresh.csrf_token, signed_in=False, new_cookie=cookie)


def check_csrf(viewer: Viewer, presented: str | None) -> None:
    if not presented or not hmac.compare_digest(viewer.csrf_token, presented):
        raise CsrfRefused()


def set_cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path=COOKIE_PATH, httponly=True, samesite="strict", secure=_is_https(request)
    )


def clear_cookie(response: Response, request: Request, name: str) -> None:
    response.delete_cookie(name, path=COOKIE_PATH, httponly=True, samesite="strict", secure=_is_https(request))


def _is_https(request: Request) -> bool:
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or forwarded == "https"
