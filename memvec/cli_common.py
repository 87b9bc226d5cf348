"""What every `memvec` command shares: how to open the home and how to print JSON."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import BaseModel

from memvec.config import MemoryConfig
from memvec.errors import InvalidInputError, StoreUnavailableError
from memvec.memory import Memory
from memvec.types import Tier

if TYPE_CHECKING:
    from memvec.service.auth import KeyRing


TIER = click.Choice([t.value for t in Tier])


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
        return Memory(config)


def open_when_store_is_up(obj: Context, wait: bool, **settings: Any) -> Memory:
    """Open the home; while its store is unreachable say so and retry (1, 2, 4 ... 30 s apart)."""
    delay = 1.0
    while True:
        try:
            return obj.open(**settings)
        except StoreUnavailableError as exc:
            if not wait:
                raise
            click.echo(f"memvec: the store is unavailable ({exc}); retrying in {delay:g} s", err=True)
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


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


def serve_http(app: Any, memory: Memory, keys: KeyRing, *, host: str, port: int, log_level: str) -> None:
    """Run an HTTP server (the REST service or MCP over HTTP) until SIGTERM or SIGINT, then save
    the indexes before the process exits, whichever signal stopped it."""
    import uvicorn

    class SavingServer(uvicorn.Server):
        # uvicorn re-raises the stopping signal after serve() returns, so SIGTERM would kill the
        # process before any code after run() (or a `with` block's exit) could save
        async def shutdown(self, sockets: Any = None) -> None:
            await super().shutdown(sockets)
            await asyncio.to_thread(memory.save)

    if keys.open:
        click.echo("memvec: no API keys configured: anyone who can reach the server can read and write "
                   "every agent", err=True)
        if not _is_loopback(host):
            click.echo(f"memvec: WARNING: serving without keys on {host}, not only on this machine; set "
                       "MEMVEC_API_KEYS or --keys-file", err=True)
    else:
        click.echo(f"memvec: {len(keys.keys)} API key(s) configured", err=True)
    SavingServer(uvicorn.Config(app, host=host, port=port, log_level=log_level)).run()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False))


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
