"""One writer per agent: a lease row in the store that an agent's reply loop holds while it runs, so
two servers (failover, no routing affinity) or two workers never interleave one agent's replies.

The lease expires after `ttl_s` unless renewed; a thread renews it every third of that while the
holder works, so a long model call keeps it, and a server killed with SIGKILL frees it within `ttl_s`.
Whoever cannot take it waits up to `wait_s`, then gets AgentBusyError (HTTP 409 with Retry-After).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from memvec.errors import AgentBusyError, StoreError
from memvec.store.base import Store
from memvec.telemetry.metrics import AGENT_BUSY, LEASE_WAIT_SECONDS

log = logging.getLogger("memvec.engine")
LEASE_TTL_S = 30.0
LEASE_WAIT_S = 30.0


def holder_name() -> str:
    """Who holds a lease: this host and process, and which hold of it (threads hold separately)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@contextmanager
def agent_lease(
    store: Store, agent: str, *, wait_s: float = LEASE_WAIT_S, ttl_s: float = LEASE_TTL_S, poll_s: float = 0.05
) -> Iterator[str]:
    """Hold `agent`'s lease for the body; yields the holder's name."""
    holder = holder_name()
    started = time.monotonic()
    deadline = started + wait_s
    while not store.acquire_lease(agent, holder, datetime.now(UTC), ttl_s):
        if time.monotonic() >= deadline:
            AGENT_BUSY.inc()
            raise AgentBusyError(f"agent {agent!r} is replying elsewhere (waited {wait_s:g} s); send it again")
        time.sleep(poll_s)
    LEASE_WAIT_SECONDS.observe(time.monotonic() - started)
    stop = threading.Event()
    renewer = threading.Thread(
        target=_renew, args=(store, agent, holder, ttl_s, stop), daemon=True, name=f"memvec-lease-{agent}"
    )
    renewer.start()
    try:
        yield holder
    finally:
        stop.set()
        renewer.join()
        store.release_lease(agent, holder)


def _renew(store: Store, agent: str, holder: str, ttl_s: float, stop: threading.Event) -> None:
    while not stop.wait(ttl_s / 3):
        try:
            if not store.renew_lease(agent, holder, datetime.now(UTC), ttl_s):
                log.warning("the lease of agent %s expired under %s and was taken", agent, holder)
                return
        except StoreError as exc:  # the store is down: the next renewal tries again
            log.warning("renewing the lease of agent %s failed: %s", agent, exc)
