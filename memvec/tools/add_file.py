"""`add_file`: a document into the agent's archival memory as chunks that cite it, for an MCP host whose
user says "remember this file". Over stdio the host is the user's own program on this machine, so a
path is read; over HTTP only content sent with the call is (a remote caller must not read the server's
files). Not offered to the agent loop's model, which has no files of its own to add."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, model_validator

from memvec.limits import MAX_DOCUMENT_CHARS
from memvec.tools.arguments import Tags, ToolArguments
from memvec.types import MetaText

if TYPE_CHECKING:
    from memvec.tools import ToolContext

ADD_FILE = (
    "Add a document (Markdown, plain text, HTML or PDF) to long-term memory, cut into chunks that cite "
    "the file, page and headings: by its absolute path on this computer, or by name and text content. "
    "The same file again adds nothing; a changed one replaces its chunks."
)


class AddFileArgs(ToolArguments):
    path: Annotated[
        str | None, Field(min_length=1, max_length=4096, description="Absolute path of the file on this computer.")
    ] = None
    name: Annotated[MetaText | None, Field(description="The file's name, with `content` (e.g. notes.md).")] = None
    content: Annotated[
        str | None, Field(min_length=1, max_length=MAX_DOCUMENT_CHARS, description="The file's text, with `name`.")
    ] = None
    tags: Tags = None

    @model_validator(mode="after")
    def _one_source(self) -> AddFileArgs:
        by_content = self.name is not None or self.content is not None
        if (self.path is not None) == by_content or (by_content and (self.name is None or self.content is None)):
            raise ValueError("give either path, or name and content")
        return self


def add_file(ctx: ToolContext, args: AddFileArgs) -> str:
    if args.path is not None:
        if not ctx.local_files:
            raise ValueError("this server reads no files by path (MCP over HTTP): send name and content instead")
        path = Path(args.path).expanduser()
        if not path.is_absolute():
            raise ValueError(f"{args.path!r} is not an absolute path; give the file's full path")
        report = ctx.memory.add_document(ctx.agent, path, tags=args.tags or ())
    else:
        assert args.name is not None and args.content is not None  # the validator's promise
        report = ctx.memory.add_document(ctx.agent, args.name, args.content, tags=args.tags or ())
    document = report.document
    return json.dumps(
        {
            "ok": True,
            "document_id": document.id,
            "file_name": document.name,
            "chunks": document.chunks,
            "pages": document.pages,
            "added": report.created,
            "replaced": report.replaced is not None,
        }
    )
