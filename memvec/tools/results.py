"""What a memory tool answers, as JSON text a model reads: citations on every hit, directive-like
text fenced and flagged `untrusted`, long results cut to the model's share of the context window."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memvec.guard import fence
from memvec.types import CoreBlock, Hit, Record

NOTHING_RELEVANT = "No relevant memory found: nothing stored matches this query well enough."


def hits_for_model(hits: list[Hit], max_chars: int = 8_000) -> str:
    """Search results as the model sees them: citations included, untrusted text fenced, each hit's
    relevance where the home's model has one, and the lowest-ranked hits dropped until the result
    fits `max_chars` (a share of the context window). No hit: a sentence that says so."""
    if not hits:
        return json.dumps({"count": 0, "message": NOTHING_RELEVANT, "results": []})
    return _fitted([{**_record_row(h, max_chars), **_scored(h)} for h in hits], max_chars)


def _scored(hit: Hit) -> dict[str, float]:
    shown = {"score": round(hit.score, 3)}
    if hit.relevance is not None:
        shown["relevance"] = round(hit.relevance, 2)
    return shown


def records_for_model(records: Sequence[Record], max_chars: int = 8_000) -> str:
    """Listed records in the shape of search results (without scores), the last dropped first to fit."""
    return _fitted([_record_row(r, max_chars) for r in records], max_chars)


def _record_row(record: Record, max_chars: int) -> dict[str, Any]:
    text = record.text if len(record.text) <= max_chars // 2 else record.text[: max_chars // 2] + " [...]"
    return {
        "id": record.id,
        "role": record.role,
        "text": fence(text, record_id=record.id) if record.untrusted else text,
        "untrusted": record.untrusted,
        "created_at": record.created_at.isoformat(timespec="seconds"),
        **_validity(record),
        "citation": record.citation.for_model(),
    }


def _fitted(rows: list[dict[str, Any]], max_chars: int) -> str:
    dropped = 0
    while True:
        text = json.dumps({"count": len(rows), "dropped_for_space": dropped, "results": rows}, ensure_ascii=False)
        if len(text) <= max_chars or len(rows) <= 1:
            return text
        rows.pop()
        dropped += 1


def _validity(record: Record) -> dict[str, str]:
    """When the fact held, where that is not simply from its record time on (a versioned passage)."""
    shown = {}
    if record.valid_from is not None and record.valid_from != record.created_at:
        shown["valid_from"] = record.valid_from.isoformat(timespec="seconds")
    if record.valid_to is not None:
        shown["valid_to"] = record.valid_to.isoformat(timespec="seconds")
    return shown


def block_view(block: CoreBlock) -> dict[str, Any]:
    return {
        "label": block.label,
        "value": block.value,
        "chars": f"{len(block.value)}/{block.limit}",
        "read_only": block.read_only,
        "description": block.description,
    }


def saved(record: Record, created: bool, **more: Any) -> str:
    return json.dumps(
        {
            "ok": True,
            "id": record.id,
            "duplicate": not created,
            **({} if created else {"duplicate_of": record.id}),
            "untrusted": record.untrusted,
            "citation": record.citation.for_model(),
            **more,
        }
    )
