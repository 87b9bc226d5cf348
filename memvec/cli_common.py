"""What every `memvec` command shares: how to open the home and how to print JSON."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click
from pydantic import BaseModel

from memvec.config import MemoryConfig
from memvec.errors import StoreUnavailableError
from memvec.memory import Memory


class Context:
    def __init__(self, home: str | None, model: str | None, index_kind: str | None, store: str | None = None,
                 embed_backend: str | None = None) -> None:
        self.home, self.model, self.index_kind, self.store = home, model, index_kind, store
        self.embed_backend = embed_backend

    def open(self, *, recorded_model: bool = False, **settings: Any) -> Memory:
        """Open the home; `recorded_model` ignores --model/--embed-backend and their environment
        variables (rebuild reads them itself)."""
        index: dict[str, Any] = {"kind": self.index_kind}
        if os.environ.get("MEMVEC_SAVE_EVERY"):  # fewer changes lost to a crash vs. more index writes
            index["save_every"] = os.environ["MEMVEC_SAVE_EVERY"]
        config = MemoryConfig.resolve(home=self.home, model=self.model, index=index,
                                      store=self.store, embed_backend=self.embed_backend, **settings)
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


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False))


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
