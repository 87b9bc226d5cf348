"""A pytest plugin for Letta's suite run against memvec (benchmarks/letta_suite.py): the plumbing
that reached into Letta's own server, and nothing else.

Some of Letta's test modules empty tables of Letta's database between tests (its sandbox settings).
Against memvec there is no such database, so those sessions run their statements on nothing; the
tests themselves and their assertions are untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


class _NoDatabase:
    async def execute(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def commit(self) -> None:
        return None


@asynccontextmanager
async def _no_session(*args: Any, **kwargs: Any) -> AsyncIterator[_NoDatabase]:
    yield _NoDatabase()


def pytest_configure(config: Any) -> None:
    from letta.server.db import db_registry  # Letta's package, in the client's venv

    db_registry.async_session = _no_session
