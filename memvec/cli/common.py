"""What every `memvec` command shares: how to open the home and how to print JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import BaseModel, TypeAdapter, ValidationError

from memvec.config import MemoryConfig
from memvec.errors import InvalidInputError, NotFoundError, StoreUnavailableError
from memvec.memory import Memory
from memvec.service.server import server_log
from memvec.types import Tier

if TYPE_CHECKING:
    pass


# the exit codes (memvec.cli.main.run maps errors to them)
EXIT_INTERNAL, EXIT_INPUT, EXIT_VERIFY, EXIT_UNAVAILABLE, EXIT_NOT_FOUND, EXIT_PORT_IN_USE = 1, 2, 3, 4, 5, 6
TIER = click.Choice([t.value for t in Tier])


class Timestamp(click.ParamType):  # type: ignore[type-arg]
    """The timestamps the API takes (ISO 8601: `2024-05-07`, `2024-05-07T10:00:00Z`, an offset such as
    `+02:00`; without a zone, UTC), parsed by the same parser."""

    name = "timestamp"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            parsed: datetime = _DATETIME.validate_python(value)
        except ValidationError:
            self.fail(
                f"{value!r} is not a timestamp (e.g. 2024-05-07, 2024-05-07T10:00:00Z, 2024-05-07T12:00:00+02:00)",
                param,
                ctx,
            )
        return parsed


TIMESTAMP = Timestamp()
_DATETIME = TypeAdapter(datetime)


class Context:
    def __init__(
        self,
        home: str | None,
        model: str | None,
        index_kind: str | None,
        store: str | None = None,
        embed_backend: str | None = None,
    ) -> None:
        self.home, self.model, self.index_kind, self.store = home, model, index_kind, store
        self.embed_backend = embed_backend

    def config(self, **settings: Any) -> MemoryConfig:
        """The global options over the environment and defaults (one resolver: MemoryConfig.resolve)."""
        return MemoryConfig.resolve(
            home=self.home,
            model=self.model,
            index={"kind": self.index_kind},
            store=self.store,
            embed_backend=self.embed_backend,
            **settings,
        )

    def open(self, *, recorded_model: bool = False, **settings: Any) -> Memory:
        """Open the home; `recorded_model` ignores --model/--embed-backend and their environment
        variables (rebuild reads them itself)."""
        config = self.config(**settings)
        if recorded_model:
            config = config.model_copy(update={"model": None, "embed_backend": None})
        memory = Memory(config)
        if memory.created_home:
            click.echo(
                f"memvec: created a new home at {memory.home} (if you meant an existing one, check --home "
                "or MEMVEC_HOME)",
                err=True,
            )
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


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False))


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
