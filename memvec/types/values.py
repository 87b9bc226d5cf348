"""The values every record, request and setting is made of: limits, names, enums, validated text
and times, and how a validation error reads."""

from __future__ import annotations

import importlib.metadata
import json
import re
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BeforeValidator,
    StringConstraints,
    ValidationError,
)

from memvec.limits import MAX_METADATA_DEPTH, json_depth_exceeds

MAX_TEXT_CHARS = 32_768
# a core block's value: Letta's default block limit (CORE_MEMORY_BLOCK_CHAR_LIMIT) is also the ceiling
MAX_BLOCK_CHARS = 100_000
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_META_CHARS = 2_048
MAX_ID = 2**62  # record ids and counters: well inside SQLite's and PostgreSQL's signed 64-bit integers
MAX_K = 1_000

# FAISS index kinds (memvec.index.vector); a home's setting may also be "auto" (by tier size)
IndexKind = Literal["flat", "hnsw", "flat-fp16", "hnsw-fp16", "flat-sq8", "hnsw-sq8"]
IndexKindSetting = Literal["auto"] | IndexKind
INDEX_KIND_SETTINGS: tuple[str, ...] = ("auto", *get_args(IndexKind))
AGENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
LABEL_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"  # a core block's label
SHARED_BLOCK_ID_PATTERN = r"^block-[0-9a-f]{32}$"  # a shared block's id (memvec.tiers.shared)


def _installed_version() -> str:
    """The version pip installed (pyproject.toml's, the one place it is written)."""
    try:
        return importlib.metadata.version("memvec")
    except importlib.metadata.PackageNotFoundError:  # a source tree run without installing
        return "0+source"


VERSION = _installed_version()

# What "now" is for validity, expiry, retention, record times and relative time expressions: the
# wall clock, or a test's (Memory.open(clock=...)), so time-dependent behaviour is tested without sleeps.
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class Tier(StrEnum):
    ARCHIVAL = "archival"
    RECALL = "recall"


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    BM25 = "bm25"
    TOKEN = "token"


class Fusion(StrEnum):
    CONVEX = "convex"
    RRF = "rrf"


EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def _utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; everything is stored and returned in UTC, years 1000-9999."""
    try:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("datetime out of range") from exc
    if not EARLIEST <= value <= LATEST:
        raise ValueError("datetime must be between years 1000 and 9999")
    return value


def checked_utf8(value: str) -> str:
    """Refuse lone surrogates (valid in a Python str and in JSON escapes, not in UTF-8 storage) and NUL
    (SQLite would store it, PostgreSQL cannot: a home must export from one and import into the other)."""
    if "\x00" in value:
        raise ValueError("text contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text is not valid Unicode (lone surrogate code point)") from exc
    return value


MAX_FILE_NAME_CHARS = 1_024
# C0 and C1 controls, and the bidirectional overrides that make a name read as another in a terminal
_NAME_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def checked_file_name(value: str) -> str:
    """A document's name (a file name, or its path under the folder added), stripped: 1 to 1,024
    characters, no control characters. ValueError says what is wrong, quoting a bounded part."""
    name = value.strip()
    shown = ascii(name[:60]) + ("..." if len(name) > 60 else "")
    if not 1 <= len(name) <= MAX_FILE_NAME_CHARS:
        raise ValueError(f"a file name has 1 to {MAX_FILE_NAME_CHARS:,} characters, not {len(name):,} ({shown})")
    if found := _NAME_CONTROLS.search(name):
        raise ValueError(f"file name {shown} contains the control character U+{ord(found.group()):04X}")
    return checked_utf8(name)


def _id_text(value: object) -> object:
    # Turn ids are often integers (a turn index); they are stored as text like every id.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


AgentName = Annotated[str, StringConstraints(pattern=AGENT_PATTERN)]
# Letta's agent id: what HTTP clients address an agent by; its name is free text and may change
AGENT_ID_PATTERN = r"^agent-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
MAX_DISPLAY_NAME_CHARS = 256
DisplayName = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=MAX_DISPLAY_NAME_CHARS, pattern=r"^[^\x00-\x1f\x7f]*[^\x00-\x20\x7f][^\x00-\x1f\x7f]*$"
    ),
    AfterValidator(checked_utf8),
]
Utf8Text = Annotated[str, AfterValidator(checked_utf8)]
MetaText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_META_CHARS), AfterValidator(checked_utf8)
]
IdText = Annotated[MetaText, BeforeValidator(_id_text)]
Tag = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TAG_CHARS, pattern=r"^[^\x00-\x1f]+$"),
    AfterValidator(checked_utf8),
]
UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
MAX_METADATA_BYTES = 16_384


def _small_json(value: dict[str, Any]) -> dict[str, Any]:
    if json_depth_exceeds(value, MAX_METADATA_DEPTH):  # deeper cannot be read back by pydantic (255 levels)
        raise ValueError(f"metadata nests more than {MAX_METADATA_DEPTH} levels deep")
    size = len(json.dumps(value, ensure_ascii=False, default=str).encode())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES}")
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_small_json)]


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, `field: message`, without pydantic's documentation links."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def normalize_text(text: str) -> str:
    """The form used to detect exact duplicates: NFKC, whitespace collapsed, case folded."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()
