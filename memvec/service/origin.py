"""Who may talk to a server without keys: this machine's own clients, not any web page.

A keyless server (the documented local setup) trusts whoever reaches it, and a browser reaches it
on behalf of every page it shows: a page can post forms to 127.0.0.1, and DNS rebinding lets one
read the answers under its own host name. So a server without keys
- answers only requests whose `Host` is a loopback name (`localhost`, `127.0.0.1`, `[::1]`, with any
  port) or one given in `allowed_hosts` (a reverse proxy's name, say), which defeats rebinding;
- refuses a request that changes something (anything but GET, HEAD, OPTIONS) when its `Origin`
  is present and is not the server's own (`http(s)://` + the Host it was sent to), so another
  site's page cannot post to it. Clients that are not browsers send no Origin and are not affected.
"""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlsplit

from starlette.types import Scope

from memvec.service.front import Refusal, header

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(host: str) -> str:
    """The name of a `Host` value without its port, lower-case (`[::1]:8283` -> `[::1]`)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def foreign_request(scope: Scope, allowed_hosts: Collection[str]) -> Refusal | None:
    """Why a keyless server refuses this request (None: it may go on); `allowed_hosts` lower-case."""
    host = header(scope, b"host") or ""
    name = host_name(host)
    if name not in LOOPBACK_NAMES and name not in allowed_hosts:
        return Refusal(
            403,
            "forbidden_host",
            f"host {name or '(none)'!r} is not served: a server without API keys "
            "answers only loopback names and --allow-host names",
        )
    return foreign_origin(scope)


def foreign_origin(scope: Scope) -> Refusal | None:
    """Why a change from another origin is refused (None: no Origin, a safe method, or its own).
    Also the memory browser's defence against login CSRF on any server: cookies are shared by every
    port of a host, so a page on another port could plant the sign-in cookie, but not its Origin."""
    host = header(scope, b"host") or ""
    origin = header(scope, b"origin")
    if origin is None or scope.get("method", "GET") in SAFE_METHODS:
        return None
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.strip().lower():
        return Refusal(
            403,
            "forbidden_origin",
            f"a request from {origin!r} may not change this server's memory (not its own origin)",
        )
    return None
