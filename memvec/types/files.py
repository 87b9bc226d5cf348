"""An agent's view of a file in its folders (Letta's file blocks): open or closed, and which lines."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class FileViewState(BaseModel):
    """What the store keeps of an agent's view of one file."""

    is_open: bool
    start_line: int | None = Field(default=None, ge=0, description="0-based first line shown; None: the start")
    end_line: int | None = Field(default=None, ge=1, description="line after the last shown; None: to the end")
    accessed_at: datetime


class FileView(BaseModel):
    """One file of an attached folder as the agent sees it: `value` is what its prompt shows (empty
    while closed), cut to `limit` characters."""

    document_id: int
    folder_id: str
    folder_name: str
    file_name: str
    label: str = Field(description="<folder name>/<file name>: how the agent names the file")
    is_open: bool
    value: str
    limit: int
    start_line: int | None = None
    end_line: int | None = None
    accessed_at: datetime
