"""The nginx configuration for several `memvec serve` on one store (`memvec router-config`).

One template, so the file the tests run behind nginx and the one the deployment guide shows are the
same text. Each agent goes to one server (consistent hash on its id), so its indexes are loaded once;
a server that is down or refuses connections is skipped to the next one on the ring. nginx never
resends a request with a body-changing method (POST, PATCH, DELETE) that already reached a server,
so a server dying mid-request can cost that request (the client sees 502 and may retry; inserts are
deduplicated) but never applies it twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memvec.errors import InvalidInputError

TEMPLATE = """\
# memvec behind nginx (`memvec router-config`): put this file in nginx's http context (conf.d/).
map $uri $memvec_agent {                        # the agent id of /v1/agents/{id}/... and /ui/agents/{id}/...
    ~^/(?:v1|ui)/agents/(?<agent>[^/]+)  $agent;
    default                             "";
}
upstream memvec {
    hash $memvec_agent consistent;              # ketama: adding or losing a server moves ~1/N of the agents
{servers}
}
server {
    listen {listen};
    client_max_body_size 16m;                   # memvec's own body limit
    location / {
        proxy_pass http://memvec;
        proxy_http_version 1.1;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-Proto $scheme;   # the browser's session cookie is Secure behind TLS
        # down, refusing, or answering 502/503 before doing anything: the next server on the ring
        # takes the request (never a POST/PATCH/DELETE that reached a server: nothing runs twice)
        proxy_next_upstream error timeout http_502 http_503;
        proxy_next_upstream_tries 3;
        proxy_connect_timeout 2s;
        proxy_read_timeout 300s;                # an agent's reply waits for its model
    }
}
"""
_UPSTREAM = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?):(\d{1,5})$")
_LISTEN = re.compile(r"^(?:(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):)?(\d{1,5})$")


def _port_ok(port: str) -> bool:
    return 1 <= int(port) <= 65535


# after a failed attempt nginx sends a server nothing for this long, even once it is back: a rolling
# restart waits until nginx routes to a restarted server again before stopping the next (docs/deployment.md)
FAIL_TIMEOUT_S = 5


def nginx_config(
    upstreams: Sequence[str], *, listen: str = "80", max_fails: int = 1, fail_timeout_s: int = FAIL_TIMEOUT_S
) -> str:
    """The configuration for `upstreams` (`host:port` of each `memvec serve`), listening on `listen`."""
    if not upstreams:
        raise InvalidInputError("name at least one upstream server (host:port)")
    for upstream in upstreams:
        found = _UPSTREAM.match(upstream)
        if found is None or not _port_ok(found.group(1)):
            raise InvalidInputError(f"upstream {upstream!r} is not host:port")
    heard = _LISTEN.match(listen)
    if heard is None or not _port_ok(heard.group(1)):
        raise InvalidInputError(f"listen {listen!r} is not a port or address:port")
    servers = "\n".join(f"    server {u} max_fails={max_fails} fail_timeout={fail_timeout_s}s;" for u in upstreams)
    return TEMPLATE.replace("{servers}", servers).replace("{listen}", listen)
