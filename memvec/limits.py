"""Bounds on untrusted JSON, checked where it is parsed: nesting depth, size and the number of values.

Python's parser and pydantic recurse once per nesting level, so a document nested a few hundred
levels deep parses but cannot be validated or written back (pydantic stops at 255 levels), and one
nested 100,000 levels deep overflows the parser. Every body, file and metadata field that memvec
reads is held to these bounds instead, with a clear error.

The number of values bounds what validating a request body can cost: pydantic reports one error per
unexpected key or wrong item, and a 16 MiB object of 600,000 keys made 1.2 million errors (about 7 s
of one core to list). The largest body a route takes (1,000 passages with every tag and citation
field) holds about 50,000 values.
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64  # request bodies and imported files: Letta agent files nest about 8 deep
MAX_METADATA_DEPTH = 16  # free-form metadata kept with agents and blocks
MAX_BODY_VALUES = 100_000  # objects, arrays and scalars in one request body
MAX_DOCUMENT_CHARS = 4_000_000  # the text parsed out of one file (memvec.documents)
# the chunks one file is cut into, checked before any is embedded: ~4,500 for the longest text of
# plain paragraphs; a file of many tiny sections (a chunk each) would otherwise hold the embedder
# for the better part of an hour
MAX_DOCUMENT_CHUNKS = 20_000


class JSONLimitError(ValueError):
    """A JSON document that cannot be parsed within the bounds (the message says why)."""


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests dicts/lists more than `limit` deep (`{}` and `[]` are depth 1)."""
    return _shape(value, limit, None) == "depth"


def _shape(value: Any, max_depth: int, max_values: int | None) -> str | None:
    """Which bound `value` breaks first ("depth", "values") or None. Level by level, without
    recursion, and it stops at the first level past a bound."""
    level, depth, count = [value], 0, 1
    while level:
        containers = [v for v in level if isinstance(v, dict | list)]
        if not containers:
            return None
        depth += 1
        if depth > max_depth:
            return "depth"
        level = [child for c in containers for child in (c.values() if isinstance(c, dict) else c)]
        count += len(level)
        if max_values is not None and count > max_values:
            return "values"
    return None


def load_json(
    data: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, max_values: int | None = None, what: str = "the body"
) -> Any:
    """Parse untrusted JSON (bytes must be UTF-8) of at most `max_values` values (None: any number);
    raises JSONLimitError, never RecursionError."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text)
    except UnicodeDecodeError as exc:
        raise JSONLimitError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except RecursionError as exc:
        raise JSONLimitError(f"{what} nests JSON more than {max_depth} levels deep") from exc
    except ValueError as exc:
        raise JSONLimitError(f"{what} is not JSON: {exc}") from exc
    broken = _shape(value, max_depth, max_values)
    if broken == "depth":
        raise JSONLimitError(f"{what} nests JSON more than {max_depth} levels deep")
    if broken == "values":
        raise JSONLimitError(f"{what} holds more than {max_values} JSON values")
    return value
