"""What every `memvec` command shares: how to open the home and how to print JSON."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import BaseModel, TypeAdapter, ValidationError

from memvec.config import MemoryConfig
from memvec.errors import InvalidInputError, NotFoundError, PortInUseError, StoreUnavailableError
from memvec.memory import Memory
from memvec.service.listener import SETTLE_S, stop_admitting
from memvec.service.protocol import HEADER_TIMEOUT_S, with_header_timeout
from memvec.tracing import export_from_environment
from memvec.types import VERSION, Tier

if TYPE_CHECKING:
    from memvec.service.auth import KeyRing


TIER = click.Choice([t.value for t in Tier])


class Timestamp(click.ParamType):
    """The timestamps the API takes (ISO 8601: `2024-05-07`, `2024-05-07T10:00:00Z`, an offset such as
    `+02:00`; without a zone, UTC), parsed by the same parser."""

    name = "timestamp"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            parsed: datetime = _DATETIME.validate_python(value)
        except ValidationError:
            self.fail(f"{value!r} is not a timestamp (e.g. 2024-05-07, 2024-05-07T10:00:00Z, "
                      "2024-05-07T12:00:00+02:00)", param, ctx)
        return parsed


TIMESTAMP = Timestamp()
_DATETIME = TypeAdapter(datetime)
server_log = logging.getLogger("memvec.server")


class Context:
    def __init__(self, home: str | None, model: str | None, index_kind: str | None, store: str | None = None,
                 embed_backend: str | None = None) -> None:
        self.home, self.model, self.index_kind, self.store = home, model, index_kind, store
        self.embed_backend = embed_backend

    def config(self, **settings: Any) -> MemoryConfig:
        """The global options over the environment and defaults (one resolver: MemoryConfig.resolve)."""
        return MemoryConfig.resolve(home=self.home, model=self.model, index={"kind": self.index_kind},
                                    store=self.store, embed_backend=self.embed_backend, **settings)

    def open(self, *, recorded_model: bool = False, **settings: Any) -> Memory:
        """Open the home; `recorded_model` ignores --model/--embed-backend and their environment
        variables (rebuild reads them itself)."""
        config = self.config(**settings)
        if recorded_model:
            config = config.model_copy(update={"model": None, "embed_backend": None})
        memory = Memory(config)
        if memory.created_home:
            click.echo(f"memvec: created a new home at {memory.home} (if you meant an existing one, check --home "
                       "or MEMVEC_HOME)", err=True)
        return memory


def open_when_store_is_up(obj: Context, wait: bool, **settings: Any) -> Memory:
    """Open the home; while its store is unreachable say so and retry (1, 2, 4 ... 30 s apart)."""
    delay = 1.0
    while True:
        try:
            return obj.open(**settings)
        except StoreUnavailableError as exc:
            if not wait:
                raise
            server_log.warning("the store is unavailable (%s); retrying in %g s", exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


def existing_agent(mem: Memory, agent: str) -> str:
    """`agent`, or NotFoundError (exit 5, the API's 404 message) when the home has no such agent: a
    typo must not read as an agent with no memories."""
    if not mem.has_agent(agent):
        raise NotFoundError(f"agent {agent!r} not found")
    return agent


def read_input_file(path: Path) -> bytes:
    """A file the user named, as bytes; a file that cannot be read is an input error naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def input_lines(path: Path) -> Iterator[bytes]:
    """A file the user named, line by line as bytes (decoding is the caller's, so it can name the line)."""
    try:
        with open(path, "rb") as lines:
            yield from lines
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def serve_http(app: Any, memory: Memory, keys: KeyRing, *, host: str, port: int, log_level: str,
               drain_s: float = 0.0, draining: threading.Event | None = None, reuse_port: bool = False,
               header_timeout_s: float = HEADER_TIMEOUT_S) -> None:
    """Run an HTTP server (the REST service or MCP over HTTP) until SIGTERM or SIGINT, then save
    the indexes before the process exits, whichever signal stopped it. With `drain_s`, the first
    signal sets `draining` (health answers 503, so a balancer stops sending) and the server goes on
    serving for `drain_s` seconds before it stops admitting connections, serves those it let in and
    closes (memvec.service.listener); a second signal stops it at once.
    Stopping finishes the requests in flight. With `reuse_port`, several processes listen on the
    same port (SO_REUSEPORT) and the kernel spreads the connections among them. A connection that does
    not send a request's headers within `header_timeout_s` is answered 408 and closed."""
    import uvicorn

    class SavingServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                server_log.info("listening on http://%s:%d: memvec %s, home %s, store %s, model %s", host, port,
                                VERSION, memory.home, memory.store_location, memory.model_id)

        # uvicorn re-raises the stopping signal after serve() returns, so SIGTERM would kill the
        # process before any code after run() (or a `with` block's exit) could save and close: the
        # store is closed here (SQLite checkpoints its WAL, so forgotten text is left in no file)
        async def shutdown(self, sockets: Any = None) -> None:
            await super().shutdown(sockets)
            await asyncio.to_thread(memory.close)

        def handle_exit(self, sig: int, frame: Any) -> None:
            if drain_s <= 0 or draining is None or draining.is_set():
                super().handle_exit(sig, frame)
                return
            draining.set()
            server_log.info("stopping: health answers 503 for %g s, then the server closes", drain_s)
            timer = threading.Timer(drain_s, self.close_gently, args=(sig, frame))
            timer.daemon = True
            timer.start()

        def close_gently(self, sig: int, frame: Any) -> None:
            # without this, a connection let in just before the listener closes is reset after its
            # request was sent (memvec.service.listener): nginx cannot resend such a POST
            try:
                if stop_admitting(sock for server in self.servers for sock in server.sockets):
                    time.sleep(SETTLE_S)
            finally:  # whatever happened, the server must still stop
                super().handle_exit(sig, frame)

    export_from_environment()  # OTLP traces, when OTEL_EXPORTER_OTLP_ENDPOINT names a collector
    _warn_if_open(keys, host)
    server = SavingServer(uvicorn.Config(app, host=host, port=port, log_level=log_level, log_config=None,
                                         access_log=False, http=with_header_timeout(header_timeout_s)))
    server.run(sockets=[_shared_socket(host, port)] if reuse_port else None)


def ensure_port_free(host: str, port: int) -> None:
    """PortInUseError when nothing more could listen on host:port, so that a second server stops at
    once, before it loads a model, with its own exit code."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no owner
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError(f"{host}:{port} is already in use (another memvec serve?); stop it or "
                                     "choose another --port") from exc
            raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def _shared_socket(host: str, port: int) -> socket.socket:
    """A listening socket that other processes may bind too (SO_REUSEPORT)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _warn_if_open(keys: KeyRing, host: str) -> None:
    if keys.open:
        server_log.warning("no API keys configured: anyone who can reach the server can read and write every "
                           "agent")
        if not _is_loopback(host):
            server_log.warning("serving without keys on %s, not only on this machine; set MEMVEC_API_KEYS or "
                               "--keys-file", host)
    else:
        server_log.info("%d API key(s) configured", len(keys.keys))


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False))


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
