"""`memvec serve` (one process or several workers on one port) and `memvec router-config`."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import click

from memvec.agent.llm import litellm_module
from memvec.agent.sleep import SleepSchedule
from memvec.cli.common import Context, open_when_store_is_up
from memvec.embed.threads import thread_count
from memvec.errors import MemvecError
from memvec.memory import Memory
from memvec.service.server import ensure_port_free, serve_http, server_log, supervise
from memvec.telemetry.logs import LogFormat
from memvec.telemetry.logs import configure as configure_logging


@dataclass(frozen=True)
class ServeOptions:
    """What each worker needs to serve (picklable: workers are spawned processes)."""

    host: str
    port: int
    keys_file: Path | None
    log_level: str
    log_format: LogFormat
    wait_for_store: bool
    max_loaded_indexes: int | None
    consolidate_every: float | None
    drain_seconds: float
    reuse_port: bool = False
    allowed_hosts: frozenset[str] = frozenset()
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_requests_per_key: int = 16
    tool_execution: str | None = None


class WorkerCount(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click
    """A number of workers (1-64), or `auto`: one per core this process may use."""

    name = "workers"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        if str(value).strip().lower() == "auto":
            return min(64, thread_count())
        try:
            count = int(str(value))
        except ValueError:
            self.fail(f"{value!r} is neither a number of workers nor 'auto'", param, ctx)
        if not 1 <= count <= 64:
            self.fail(f"{count} is not a number of workers from 1 to 64 (or 'auto')", param, ctx)
        return count


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8283, show_default=True)
@click.option(
    "--keys-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="API keys, one per line (KEY or KEY=agent1|agent2); also MEMVEC_API_KEYS / MEMVEC_API_KEYS_FILE.",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    help="info: a startup line and one line per request (method, route, status, duration, request "
    "id, key id); warning: failures only.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    envvar="MEMVEC_LOG_FORMAT",
    help="Log lines on stderr as text or one JSON object each [env MEMVEC_LOG_FORMAT].",
)
@click.option(
    "--wait-for-store/--no-wait-for-store",
    default=True,
    show_default=True,
    help="When the store (PostgreSQL) is down at start: retry with backoff until it is back, or exit 4.",
)
@click.option(
    "--max-loaded-indexes",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Keep at most N (agent, tier) indexes in memory; the least recently used are saved and "
    "unloaded, and reload on next use [env MEMVEC_MAX_LOADED_INDEXES; default no limit].",
)
@click.option(
    "--consolidate-every",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="MINUTES",
    help="Opt-in sleep-time consolidation: every MINUTES, each agent with a model and new messages "
    "gets a `memvec consolidate` run [default: never].",
)
@click.option(
    "--drain-seconds",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    metavar="S",
    help="On SIGTERM/SIGINT, answer /v1/health with 503 (draining) and keep serving for S seconds "
    "before closing, so a health-checking balancer moves traffic away first (a second signal "
    "stops at once); then it stops admitting connections and serves those it had let in, so "
    "none is reset. Requests in flight always finish; indexes are saved.",
)
@click.option(
    "--workers",
    type=WorkerCount(),
    default="1",
    show_default=True,
    metavar="N|auto",
    help="Processes serving the same port (the kernel spreads connections; each loads the model "
    "and its own indexes, all on the one store; `auto`: one per core). Each worker's model and "
    "searches get an equal share of the cores (MEMVEC_THREADS, unless set). A worker that dies "
    "is started again.",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Without API keys the server answers only requests sent to a loopback name (localhost, "
    "127.0.0.1, [::1]) and refuses changes from another site's page (its Origin); allow this "
    "Host name too, e.g. a reverse proxy's (repeatable) [env MEMVEC_ALLOWED_HOSTS, comma-separated].",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0.1, max=600),
    default=10.0,
    show_default=True,
    metavar="S",
    help="A connection must send each request's headers within S seconds (408 and closed).",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0.1, max=3600),
    default=30.0,
    show_default=True,
    metavar="S",
    help="A request's body must arrive within S seconds of its headers (408).",
)
@click.option(
    "--max-requests-per-key",
    type=click.IntRange(min=1, max=10_000),
    default=16,
    show_default=True,
    metavar="N",
    help="Requests of one API key served at once; more are answered 429 with Retry-After, "
    "so one tenant cannot take the server.",
)
@click.option(
    "--tool-execution",
    type=click.Choice(["client", "subprocess"]),
    default=None,
    help="How a call of a custom tool (POST /v1/tools) is answered: 'client' sends it back to the "
    "client to run or approve (Letta's approval flow); 'subprocess' runs the tool's Python source "
    "here in a limited child process, with no secrets, as this server's user: only for tools you "
    "trust (docs/reference.md, 'Custom tools') [env MEMVEC_TOOL_EXECUTION; default client].",
)
@click.pass_obj
def serve(
    obj: Context,
    host: str,
    port: int,
    keys_file: Path | None,
    log_level: str,
    log_format: LogFormat,
    wait_for_store: bool,
    max_loaded_indexes: int | None,
    consolidate_every: float | None,
    drain_seconds: float,
    workers: int,
    allowed_hosts: tuple[str, ...],
    header_timeout: float,
    body_timeout: float,
    max_requests_per_key: int,
    tool_execution: str | None,
) -> None:
    """Serve the memory home over HTTP (REST API under /v1, memory browser under /ui, OpenAPI docs at
    /docs). While the store is unreachable requests answer 503 with Retry-After and /v1/health
    reports it (503)."""
    options = ServeOptions(
        host,
        port,
        keys_file,
        log_level,
        log_format,
        wait_for_store,
        max_loaded_indexes,
        consolidate_every,
        drain_seconds,
        reuse_port=workers > 1,
        allowed_hosts=frozenset(allowed_hosts or _environment_hosts()),
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        max_requests_per_key=max_requests_per_key,
        tool_execution=tool_execution,
    )
    if workers == 1:
        serve_one(obj, options)
    else:
        supervise_workers(obj, options, workers)


def _environment_hosts() -> list[str]:
    return [name.strip() for name in os.environ.get("MEMVEC_ALLOWED_HOSTS", "").split(",") if name.strip()]


def serve_one(obj: Context, options: ServeOptions) -> None:
    """One server process until SIGTERM/SIGINT (see serve_http)."""
    from memvec.service.app import create_app
    from memvec.service.auth import KeyRing

    configure_logging(options.log_level, options.log_format)
    keys = KeyRing.from_environment(options.keys_file)
    if not options.reuse_port:  # workers share the port their supervisor checked
        ensure_port_free(options.host, options.port)
    budget: dict[str, object] = {"max_loaded_indexes": options.max_loaded_indexes} if options.max_loaded_indexes else {}
    if options.tool_execution:
        budget["tool_execution"] = options.tool_execution
    with open_when_store_is_up(obj, options.wait_for_store, query_batching=True, **budget) as mem:
        server_log.info("embedding with %s (dim %d)", mem.model_id, mem.embedding_dim)  # loads the model now
        warm_llm_library(mem)
        every = options.consolidate_every
        schedule = SleepSchedule(mem, every * 60).start() if every else None
        try:
            app = create_app(
                mem,
                keys,
                allowed_hosts=options.allowed_hosts,
                body_timeout_s=options.body_timeout,
                max_in_flight_per_key=options.max_requests_per_key,
            )
            serve_http(
                app,
                mem,
                keys,
                host=options.host,
                port=options.port,
                log_level=options.log_level,
                drain_s=options.drain_seconds,
                draining=app.state.service.draining,
                reuse_port=options.reuse_port,
                header_timeout_s=options.header_timeout,
            )
        finally:
            if schedule is not None:
                schedule.stop()


def warm_llm_library(mem: Memory) -> threading.Thread:
    """Import litellm in the background when an agent of this home has a model, so that the first
    reply after a start does not wait seconds for the import (a home without one never loads it)."""

    def warm() -> None:
        try:
            if any(mem.get_agent(name)[0].model for name in mem.agents()):
                litellm_module()
        except MemvecError:  # the store went away, or the server is stopping: the first reply imports it
            pass

    thread = threading.Thread(target=warm, name="memvec-litellm-warm-up", daemon=True)
    thread.start()
    return thread


def _worker(obj: Context, options: ServeOptions) -> None:
    os.setpgrp()  # a terminal's Ctrl-C reaches the supervisor, which passes it on once
    serve_one(obj, options)


def threads_per_worker(workers: int) -> int:
    """Each worker's share of the cores this process may use, for its model and its searches."""
    return max(1, thread_count() // workers)


def supervise_workers(obj: Context, options: ServeOptions, workers: int) -> None:
    """`workers` server processes on one port (service.server.supervise)."""
    from memvec.service.auth import KeyRing

    configure_logging(options.log_level, options.log_format)
    KeyRing.from_environment(options.keys_file)  # a bad key entry stops here, once, not in every worker
    ensure_port_free(options.host, options.port)
    # workers are spawned with this environment: each one's model and search lane get their share of
    # the cores, or two workers' model threads would take turns at every core
    os.environ.setdefault("MEMVEC_THREADS", str(threads_per_worker(workers)))
    server_log.info("%d workers, %s model thread(s) each", workers, os.environ["MEMVEC_THREADS"])
    # the first worker alone runs the consolidation schedule: one run per interval, not one per worker
    plans = [(obj, options if n == 0 else replace(options, consolidate_every=None)) for n in range(workers)]
    supervise(_worker, plans, where=f"{options.host}:{options.port}")


@click.command(name="router-config")
@click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    required=True,
    metavar="HOST:PORT",
    help="A `memvec serve` behind the router (repeat for each server).",
)
@click.option("--listen", default="80", show_default=True, help="Where nginx listens: a port or address:port.")
def router_config(upstreams: tuple[str, ...], listen: str) -> None:
    """Print the nginx configuration that routes each agent to one of several `memvec serve` on one
    store (consistent hash on the agent id; a server that is down is skipped; nothing runs twice).
    See docs/deployment.md."""
    from memvec.service.nginx import nginx_config

    click.echo(nginx_config(list(upstreams), listen=listen), nl=False)
