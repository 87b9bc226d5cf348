"""The ledger of message requests in the SQL stores: which sends are running or answered, so a client
that retries (letta-client re-sends a message its timeout gave up on) gets the first attempt's answer
instead of a second run of the agent, on whichever server the retry reaches.

A row holds the answer's JSON for `REQUEST_TTL` only (a retry comes within seconds or minutes), and
every row of an agent goes when any of its records is deleted or forgotten: an answer quotes the
messages it stored, and what was forgotten must be in no table."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from memvec.store.rows import format_time

REQUEST_TTL = timedelta(minutes=15)  # an answer kept for retries; a run still "running" past it was lost
Claim = tuple[Literal["claimed", "running", "done"], str | None]


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...


class RequestStore:
    """The request-ledger methods of `SQLStore` (a mixin over its plumbing)."""

    def claim_request(self: _SQL, key: str, agent: str, now: datetime, *, fresh: bool) -> Claim:
        """Claim `key` for a run ("claimed"), or say a run of it is going on ("running") or answered
        (("done", the answer's JSON)). A `fresh` request (a first attempt, not a retry) is run
        whatever an earlier one with the same fingerprint did: the same text sent again is a new message."""
        with self._write() as db:
            self._run(db, "DELETE FROM message_requests WHERE started_at < ?", (format_time(now - REQUEST_TTL),))
            row = self._run(db, "SELECT state, response FROM message_requests WHERE key = ?", (key,)).fetchone()
            if row is not None and not fresh:
                return ("done", str(row["response"])) if row["state"] == "done" else ("running", None)
            self._run(db, "DELETE FROM message_requests WHERE key = ?", (key,))
            self._run(
                db,
                "INSERT INTO message_requests (key, agent, state, started_at) VALUES (?, ?, 'running', ?)",
                (key, agent, format_time(now)),
            )
            return "claimed", None

    def finish_request(self: _SQL, key: str, response: str) -> None:
        with self._write() as db:
            self._run(db, "UPDATE message_requests SET state = 'done', response = ? WHERE key = ?", (response, key))

    def drop_request(self: _SQL, key: str) -> None:
        """The claimed run did not answer (it failed, or its client left first): a retry runs it."""
        with self._write() as db:
            self._run(db, "DELETE FROM message_requests WHERE key = ?", (key,))

    def forget_requests(self: _SQL, agent: str) -> None:
        with self._write() as db:
            self._run(db, "DELETE FROM message_requests WHERE agent = ?", (agent,))
