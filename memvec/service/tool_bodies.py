"""Request and response bodies of `/v1/tools` (Letta's Tool, ToolCreate and ToolUpdate)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memvec.tools.catalogue import OfferedTool
from memvec.types import MAX_META_CHARS, MAX_TAGS, Metadata, Tag
from memvec.types.tools import MAX_RETURN_CHAR_LIMIT, MAX_SCHEMA_BYTES, MAX_TOOL_SOURCE_CHARS


def _bounded_schema(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and len(json.dumps(value)) > MAX_SCHEMA_BYTES:
        raise ValueError(f"a schema is at most {MAX_SCHEMA_BYTES // 1000} kB of JSON")
    return value


class ToolIn(BaseModel):
    """Letta's ToolCreate: Python source defining the tool's function (the last one defined). Its
    schema is read from the source unless `json_schema` is given; fields Letta has and memvec does
    not use (pip and npm requirements, parallel execution) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    source_code: str = Field(min_length=1, max_length=MAX_TOOL_SOURCE_CHARS)
    source_type: str = Field(default="python", pattern=r"^python$", description="only Python tools are served")
    description: str | None = Field(default=None, max_length=MAX_META_CHARS)
    tags: list[Tag] | None = Field(default=None, max_length=MAX_TAGS)
    json_schema: dict[str, Any] | None = Field(default=None, description="default: read from source_code")
    args_json_schema: dict[str, Any] | None = Field(default=None, description="a pydantic model's schema")
    return_char_limit: int | None = Field(default=None, ge=1, le=MAX_RETURN_CHAR_LIMIT)
    default_requires_approval: bool | None = None
    metadata: Metadata | None = Field(default=None, alias="metadata_")

    _schemas = field_validator("json_schema", "args_json_schema")(_bounded_schema)


class ToolPatch(BaseModel):
    """Letta's ToolUpdate: the fields given replace the tool's (a new source is read again)."""

    model_config = ConfigDict(extra="ignore")

    source_code: str | None = Field(default=None, min_length=1, max_length=MAX_TOOL_SOURCE_CHARS)
    description: str | None = Field(default=None, max_length=MAX_META_CHARS)
    tags: list[Tag] | None = Field(default=None, max_length=MAX_TAGS)
    json_schema: dict[str, Any] | None = None
    args_json_schema: dict[str, Any] | None = None
    return_char_limit: int | None = Field(default=None, ge=1, le=MAX_RETURN_CHAR_LIMIT)
    default_requires_approval: bool | None = None
    metadata: Metadata | None = Field(default=None, alias="metadata_")

    _schemas = field_validator("json_schema", "args_json_schema")(_bounded_schema)


class ToolOut(BaseModel):
    """Letta's Tool. Built-in tools have no source (`tool_type` says which kind they are)."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    name: str
    tool_type: str
    description: str
    source_type: str | None
    source_code: str | None
    json_schema: dict[str, Any]
    args_json_schema: dict[str, Any] | None
    tags: list[str]
    return_char_limit: int
    default_requires_approval: bool
    metadata: dict[str, Any] = Field(serialization_alias="metadata_")
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @classmethod
    def of(cls, tool: OfferedTool) -> ToolOut:
        custom = tool.custom
        return cls(
            id=tool.id,
            name=tool.name,
            tool_type=tool.kind,
            description=tool.description,
            source_type="python" if custom else None,
            source_code=custom.source_code if custom else None,
            json_schema=tool.schema["function"],
            args_json_schema=custom.args_json_schema if custom else None,
            tags=custom.tags if custom else [tool.kind],
            return_char_limit=custom.return_char_limit if custom else 50_000,
            default_requires_approval=custom.default_requires_approval if custom else False,
            metadata=custom.metadata if custom else {},
            created_at=custom.created_at if custom else None,
            updated_at=custom.updated_at if custom else None,
        )


class ToolRunIn(BaseModel):
    """Letta's tool-run request: the arguments, as the agent's model would give them."""

    model_config = ConfigDict(extra="ignore")
    args: dict[str, Any] = Field(default_factory=dict)


class ToolRunOut(BaseModel):
    """Letta's ToolExecutionResult."""

    status: Literal["success", "error"]
    func_return: Any | None = Field(default=None, description="what the tool returned (None when it failed)")
    stdout: list[str] | None = None
    stderr: list[str] | None = Field(default=None, description="why it failed")
