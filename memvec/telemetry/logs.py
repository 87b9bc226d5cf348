"""Log lines of a server (`memvec serve`, `memvec mcp --http`): text or JSON on stderr, each with the
id of the request being served when there is one (REQUEST_ID, set by memvec.service.access_log; a
scheduled consolidation run sets its own). uvicorn's lines go through the same handler; its access
log is off, memvec's one line per request replaces it."""

from __future__ import annotations

import contextvars
import json
import logging
import time
from typing import Any, Literal

LogFormat = Literal["text", "json"]
REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("memvec_request_id", default="")
# extra fields a line may carry (access lines: method, route, status, ...), in this order; a text
# line's message already says the first three
FIELDS = ("method", "route", "status", "duration_ms", "key_id", "client")
TEXT_FIELDS = FIELDS[3:]
_LOGGERS = ("memvec", "uvicorn", "uvicorn.error")


class RequestIdFilter(logging.Filter):
    """Stamps each record with the id of the request being served (empty outside one). Thread pools
    run route handlers in a copy of the request's context, so the agent loop's lines carry it too."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


def _utc(record: logging.LogRecord) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{stamp}.{int(record.msecs):03d}Z"


class TextFormatter(logging.Formatter):
    """`2026-12-02T10:00:00.123Z INFO memvec.access [id] message key=value ...`"""

    def format(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", "")
        fields = " ".join(f"{name}={getattr(record, name)}" for name in TEXT_FIELDS if hasattr(record, name))
        line = " ".join(
            part
            for part in (
                _utc(record),
                record.levelname,
                record.name,
                f"[{request_id}]" if request_id else "",
                record.getMessage(),
                fields,
            )
            if part
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id and the line's fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _utc(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if getattr(record, "request_id", ""):
            out["request_id"] = record.request_id  # type: ignore[attr-defined]
        out.update({name: getattr(record, name) for name in FIELDS if hasattr(record, name)})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str, fmt: LogFormat) -> None:
    """memvec's and uvicorn's loggers write `fmt` lines at `level` to stderr (and nowhere else)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RequestIdFilter())
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
