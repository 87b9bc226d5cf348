"""What the routes show of the files an agent sees (Letta's FileBlock and its agent-file listing)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memvec.types.files import FileView


def file_id(document_id: int) -> str:
    return f"file-{document_id}"


class FileBlockOut(BaseModel):
    """Letta's FileBlock: a file of an attached folder as the agent's prompt shows it (`value` is
    empty while it is closed)."""

    id: str = Field(description="file-block-<agent's file>: not a block that can be edited")
    label: str = Field(description="<folder name>/<file name>")
    value: str
    limit: int = Field(description="characters of the file shown at most (the agent's per-file view window)")
    read_only: bool = True
    description: str | None = None
    file_id: str
    source_id: str
    is_open: bool
    last_accessed_at: datetime

    @classmethod
    def of(cls, view: FileView) -> FileBlockOut:
        return cls(
            id=f"file-block-{view.document_id}",
            label=view.label,
            value=view.value,
            limit=view.limit,
            file_id=file_id(view.document_id),
            source_id=view.folder_id,
            is_open=view.is_open,
            last_accessed_at=view.accessed_at,
        )


class AgentFileOut(BaseModel):
    """One file of the agent's folders, open or closed (Letta's agent-file listing)."""

    id: str
    file_id: str
    file_name: str = Field(description="<folder name>/<file name>")
    folder_id: str
    folder_name: str
    is_open: bool
    start_line: int | None = Field(default=None, description="1-based first line shown, when a range is open")
    end_line: int | None = Field(default=None, description="last line shown, when a range is open")
    visible_content: str | None = None
    last_accessed_at: datetime

    @classmethod
    def of(cls, view: FileView) -> AgentFileOut:
        return cls(
            id=f"file-agent-{view.document_id}",
            file_id=file_id(view.document_id),
            file_name=view.label,
            folder_id=view.folder_id,
            folder_name=view.folder_name,
            is_open=view.is_open,
            start_line=None if view.start_line is None else view.start_line + 1,
            end_line=view.end_line,
            visible_content=view.value or None,
            last_accessed_at=view.accessed_at,
        )


class AgentFilesPage(BaseModel):
    files: list[AgentFileOut]
    next_cursor: str | None = Field(default=None, description="the last file's id, to page on with `after`")
    has_more: bool


class ClosedFile(BaseModel):
    message: str
