"""The server's runtime, whoever serves (the REST service, MCP over HTTP): one process until a signal
(drain, save, close), the port checks, and the supervisor of `serve --workers N` (processes on one
port, started again when they die)."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import multiprocessing
import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client.multiprocess import mark_process_dead

from memvec.errors import InvalidInputError, PortInUseError, ServerStartError
from memvec.memory import Memory
from memvec.service.listener import SETTLE_S, stop_admitting
from memvec.service.protocol import HEADER_TIMEOUT_S, with_header_timeout
from memvec.telemetry.tracing import export_from_environment
from memvec.types import VERSION

if TYPE_CHECKING:
    from memvec.service.auth import KeyRing

server_log = logging.getLogger("memvec.server")
QUICK_EXIT_S = 30.0  # a worker that exits by itself this soon after its first start would only fail again
MAX_RESTART_DELAY_S = 30.0


def serve_http(
    app: Any,
    memory: Memory,
    keys: KeyRing,
    *,
    host: str,
    port: int,
    log_level: str,
    drain_s: float = 0.0,
    draining: threading.Event | None = None,
    reuse_port: bool = False,
    header_timeout_s: float = HEADER_TIMEOUT_S,
) -> None:
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
                server_log.info(
                    "listening on http://%s:%d: memvec %s, home %s, store %s, model %s",
                    host,
                    port,
                    VERSION,
                    memory.home,
                    memory.store_location,
                    memory.model_id,
                )

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
    server = SavingServer(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            log_config=None,
            access_log=False,
            # asyncio's own loop, even where uvloop is installed: under uvloop a draining server let
            # requests fail (tests/test_cluster.py's rolling restart), its listener not closed as
            # memvec.service.listener closes it
            loop="asyncio",
            http=with_header_timeout(header_timeout_s),
        )
    )
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
                raise PortInUseError(
                    f"{host}:{port} is already in use (another memvec serve?); stop it or choose another --port"
                ) from exc
            raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def _shared_socket(host: str, port: int) -> socket.socket:
    """A listening socket that other processes may bind too (SO_REUSEPORT). Made as TCP by name: asyncio
    turns Nagle's algorithm off (TCP_NODELAY) only on connections of a socket whose protocol says TCP,
    and with it on, a response written in two parts waited for the client's delayed ACK (~40 ms)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _warn_if_open(keys: KeyRing, host: str) -> None:
    if keys.open:
        server_log.warning("no API keys configured: anyone who can reach the server can read and write every agent")
        if not _is_loopback(host):
            server_log.warning(
                "serving without keys on %s, not only on this machine; set MEMVEC_API_KEYS or --keys-file", host
            )
    else:
        server_log.info("%d API key(s) configured", len(keys.keys))


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def supervise(target: Callable[..., None], plans: Sequence[tuple[Any, ...]], *, where: str) -> None:
    """Run `target(*plan)` in one spawned process per plan and keep them running until SIGTERM/SIGINT,
    which each worker gets once (and drains, saves and exits as a single server would). A worker that
    exits soon after its first start stops them all (ServerStartError); one that once served is started
    again, later each time it fails again soon."""
    counted_in = _metrics_folder()
    spawn = multiprocessing.get_context("spawn")  # no fork of a process holding threads and a model
    running: list[Any] = [spawn.Process(target=target, args=plan, daemon=False) for plan in plans]
    stopping: list[int] = []

    def stop(sig: int, _: Any) -> None:
        stopping.append(sig)
        for process in running:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, sig)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for process in running:
            process.start()
        server_log.info("%d workers on %s", len(running), where)
        started, restarts = [time.monotonic()] * len(running), [0] * len(running)
        while not stopping:
            for n, process in enumerate(running):
                if process.pid is None or process.is_alive() or stopping:  # not started yet, or running
                    continue
                quick = (process.exitcode or 0) >= 0 and time.monotonic() - started[n] < QUICK_EXIT_S
                if quick and restarts[n] == 0:  # its first start failed: the port, the home, a key file
                    stop(signal.SIGTERM, None)
                    raise ServerStartError(f"worker {n} exited at start ({process.exitcode}); see above")
                # a worker that once served is started again; one that fails again soon waits longer
                delay = _restart_delay(restarts[n]) if quick else 0.0
                server_log.warning("worker %d exited (%s); starting it again in %g s", n, process.exitcode, delay)
                mark_process_dead(process.pid)  # type: ignore[no-untyped-call]  # its gauge no longer counts
                running[n] = spawn.Process(target=target, args=plans[n], daemon=False)
                started[n], restarts[n] = time.monotonic() + delay, restarts[n] + 1
            for n, process in enumerate(running):
                if process.pid is None and time.monotonic() >= started[n] and not stopping:
                    _start_worker(n, process, started, restarts)
            time.sleep(0.5)
        for process in running:
            if process.pid is not None:
                process.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if counted_in is not None:
            counted_in.cleanup()


def _restart_delay(restarts: int) -> float:
    """Seconds before a worker's next start, doubling with each restart that failed again."""
    return min(2.0**restarts, MAX_RESTART_DELAY_S)


def _start_worker(n: int, process: Any, started: list[float], restarts: list[int]) -> None:
    """Start a worker again; when the system refuses a process (no memory, too many files), try
    later rather than leave the others without a supervisor."""
    try:
        process.start()
    except OSError as exc:
        delay = _restart_delay(restarts[n])
        server_log.warning("worker %d could not be started (%s); trying again in %g s", n, exc, delay)
        started[n], restarts[n] = time.monotonic() + delay, restarts[n] + 1


def _metrics_folder() -> tempfile.TemporaryDirectory[str] | None:
    """Where the workers count (prometheus-client's multiprocess mode, so that any worker's /metrics
    sums them all): a new folder, unless the operator named one in PROMETHEUS_MULTIPROC_DIR."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    folder = tempfile.TemporaryDirectory(prefix="memvec-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder.name  # the spawned workers inherit it
    return folder
