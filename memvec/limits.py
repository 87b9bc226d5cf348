"""Bounds on untrusted JSON, checked where it is parsed: nesting depth and size.

Python's parser and pydantic recurse once per nesting level, so a document nested a few hundred
levels deep parses but cannot be validated or written back (pydantic stops at 255 levels), and one
nested 100,000 levels deep overflows the parser. Every body, file and metadata field that memvec
reads is held to these bounds instead, with a clear error.
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64  # request bodies and imported files: Letta agent files nest about 8 deep
MAX_METADATA_DEPTH = 16  # free-form metadata kept with agents and blocks


class JSONLimitError(ValueError):
    """A JSON document that cannot be parsed within the bounds (the message says why)."""


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests dicts/lists more than `limit` deep (`{}` and `[]` are depth 1).
    Level by level, without recursion, and it stops at the first level past the limit."""
    level, depth = [value], 0
    while level:
        containers = [v for v in level if isinstance(v, dict | list)]
        if not containers:
            return False
        depth += 1
        if depth > limit:
            return True
        level = [child for c in containers for child in (c.values() if isinstance(c, dict) else c)]
    return False


def load_json(data: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, what: str = "the body") -> Any:
    """Parse untrusted JSON (bytes must be UTF-8); raises JSONLimitError, never RecursionError."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text)
    except UnicodeDecodeError as exc:
        raise JSONLimitError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except RecursionError as exc:
        raise JSONLimitError(f"{what} nests JSON more than {max_depth} levels deep") from exc
    except ValueError as exc:
        raise JSONLimitError(f"{what} is not JSON: {exc}") from exc
    if json_depth_exceeds(value, max_depth):
        raise JSONLimitError(f"{what} nests JSON more than {max_depth} levels deep")
    return value
