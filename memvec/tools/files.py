"""The file tools (Letta's letta_files_core): an agent reads the files of its folders. open_files
puts lines of files into its prompt (memvec.tiers.open_files), grep_files finds lines by pattern
in every file, semantic_search_files finds passages by meaning (the folders' chunks in its
archival tier). Their schemas read as Letta's, so a model prompted for Letta calls them alike."""

from __future__ import annotations

import time
from typing import Any, Protocol

import regex
from pydantic import BaseModel, ConfigDict, Field

from memvec.documents.lines import file_lines
from memvec.tools.arguments import ToolArguments
from memvec.types.files import FileView

GREP_PAGE = 20  # matches shown per call
GREP_MAX_MATCHES = 1_000  # matches collected at most
GREP_TIMEOUT_S = 2.0  # for the whole search: a pattern that backtracks without end is stopped
MAX_PATTERN_CHARS = 1_000
PASSAGE_LINES = 20


class FileOpenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file_name: str = Field(min_length=1, max_length=2_048, description="Name of the file to open")
    offset: int | None = Field(
        default=None,
        ge=0,
        description="Optional offset for starting line number (0-indexed). "
        "If not specified, starts from beginning of file.",
    )
    length: int | None = Field(
        default=None,
        ge=1,
        description="Optional number of lines to view from offset (inclusive). If not specified, views to end of file.",
    )


class OpenFilesArgs(ToolArguments):
    file_requests: list[FileOpenRequest] = Field(min_length=1, max_length=100)
    close_all_others: bool = False


class GrepFilesArgs(ToolArguments):
    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS)
    include: str | None = Field(default=None, max_length=MAX_PATTERN_CHARS)
    context_lines: int | None = Field(default=1, ge=0, le=20)
    offset: int | None = Field(default=None, ge=0)


class SemanticSearchFilesArgs(ToolArguments):
    query: str = Field(min_length=1, max_length=10_000)
    limit: int = Field(default=5, ge=1, le=50)


OPEN_FILES = (
    (
        "Open one or more files and load their contents into files section in core memory. "
        "Maximum of 5 files can be opened simultaneously.\n"
    )
    + """
Use this when you want to:
- Inspect or reference file contents during reasoning
- View specific portions of large files (e.g. functions or definitions)
- Replace currently open files with a new set for focused context (via `close_all_others=True`)

Examples:
    Open single file belonging to a directory named `project_utils` (entire content):
        file_requests = [FileOpenRequest(file_name="project_utils/config.py")]

    Open multiple files with different view ranges:
        file_requests = [
            FileOpenRequest(file_name="project_utils/config.py", offset=0, length=50),     # Lines 1-50
            FileOpenRequest(file_name="project_utils/main.py", offset=100, length=100),    # Lines 101-200
            FileOpenRequest(file_name="project_utils/utils.py")                            # Entire file
        ]

    Close all other files and open new ones:
        open_files(agent_state, file_requests, close_all_others=True)"""
)

GREP_FILES = """Searches file contents for pattern matches with surrounding context.

Results are paginated - shows 20 matches per call. The response includes:
- A summary of total matches and which files contain them
- The current page of matches (20 at a time)
- Instructions for viewing more matches using the offset parameter

Example usage:
    First call: grep_files(pattern="TODO")
    Next call: grep_files(pattern="TODO", offset=20)  # Shows matches 21-40

Returns search results containing:
- Summary with total match count and file distribution
- List of files with match counts per file
- Current page of matches (up to 20)
- Navigation hint for next page if more matches exist"""

SEMANTIC_SEARCH_FILES = """Searches file contents using semantic meaning rather than exact matches.

Ideal for:
- Finding conceptually related information across files
- Discovering relevant content without knowing exact keywords
- Locating files with similar topics or themes"""

_REQUEST = {
    "type": "object",
    "properties": {
        name: {"type": "string" if name == "file_name" else "integer", "description": field.description}
        for name, field in FileOpenRequest.model_fields.items()
    },
    "required": ["file_name"],
}
PARAMETERS: dict[str, dict[str, Any]] = {
    "open_files": {
        "type": "object",
        "properties": {
            "file_requests": {
                "type": "array",
                "items": _REQUEST,
                "description": "List of file open requests, each specifying file name and optional view range.",
            },
            "close_all_others": {
                "type": "boolean",
                "description": "If True, closes all other currently open files first. Defaults to False.",
            },
        },
        "required": ["file_requests"],
    },
    "grep_files": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Keyword or regex pattern to search within file contents."},
            "include": {
                "type": "string",
                "description": "Optional keyword or regex pattern to filter filenames to include in the search.",
            },
            "context_lines": {
                "type": "integer",
                "description": "Number of lines of context to show before and after each match.\n"
                "Equivalent to `-C` in grep_files. Defaults to 1.",
            },
            "offset": {
                "type": "integer",
                "description": "Number of matches to skip before showing results. Used for pagination.\n"
                "For example, offset=20 shows matches starting from the 21st match.\n"
                "Use offset=0 (or omit) for first page, offset=20 for second page,\n"
                "offset=40 for third page, etc. The tool will tell you the exact\n"
                "offset to use for the next page.",
            },
        },
        "required": ["pattern"],
    },
    "semantic_search_files": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The search query text to find semantically similar content."},
            "limit": {"type": "integer", "description": "Maximum number of results to return (default: 5)"},
        },
        "required": ["query"],
    },
}


class FileSource(Protocol):
    """What the tools read of an agent's files (memvec.tiers.open_files.AgentFiles)."""

    def list(self) -> list[FileView]: ...

    def text(self, document_id: int) -> str: ...


def grep(files: FileSource, args: GrepFilesArgs) -> str:
    """Matching lines of every attached file, `context_lines` around each, a page at a time."""
    try:
        pattern = regex.compile(args.pattern.strip(), regex.IGNORECASE)
        include = regex.compile(_glob(args.include.strip()), regex.IGNORECASE) if args.include else None
    except regex.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    views = [v for v in files.list() if include is None or include.search(v.label, timeout=GREP_TIMEOUT_S)]
    if not views:
        return "No files are attached to search" if include is None else f"No files match '{args.include}'"
    matches = _matches(files, views, pattern, args.context_lines or 0)
    if not matches:
        return f"No matches found for pattern: '{args.pattern}'"
    return _grep_page(args, matches)


def _glob(include: str) -> str:
    """A glob like `*.py` as a regular expression; anything else is one already."""
    if "*" in include and not any(c in include for c in "^$()[]{}\\+"):
        return include.replace(".", r"\.").replace("*", ".*").replace("?", ".") + "$"
    return include


def _matches(files: FileSource, views: list[FileView], pattern: Any, around: int) -> list[tuple[str, int, list[str]]]:
    found: list[tuple[str, int, list[str]]] = []
    deadline = time.monotonic() + GREP_TIMEOUT_S
    for view in views:
        lines = file_lines(view.file_name, files.text(view.document_id))
        for index, line in enumerate(lines):
            try:
                hit = pattern.search(line, timeout=max(0.001, deadline - time.monotonic()))
            except TimeoutError:
                raise ValueError("the pattern took too long to match: make it simpler") from None
            if hit:
                shown = range(max(0, index - around), min(len(lines), index + around + 1))
                block = [f"{'>' if i == index else ' '} {i + 1}: {lines[i]}" for i in shown]
                found.append((view.label, index + 1, block))
                if len(found) >= GREP_MAX_MATCHES:
                    return found
    return found


def _grep_page(args: GrepFilesArgs, matches: list[tuple[str, int, list[str]]]) -> str:
    start = args.offset or 0
    end = min(start + GREP_PAGE, len(matches))
    counts: dict[str, int] = {}
    for label, _, _ in matches:
        counts[label] = counts.get(label, 0) + 1
    more = "+" if len(matches) >= GREP_MAX_MATCHES else ""
    out = [
        f"Found {len(matches)}{more} total matches across {len(counts)} files "
        f"(showing matches {start + 1}-{end} of {len(matches)}{more})",
        "=" * 80,
        "\nFiles with matches:",
        *(f"  - {label}: {n} matches" for label, n in sorted(counts.items(), key=lambda kv: -kv[1])),
        "",
        *(f"\n=== {label}:{number} ===\n" + "\n".join(block) for label, number, block in matches[start:end]),
        "",
    ]
    if end < len(matches):
        out.append(f'To see more matches, call: grep_files(pattern="{args.pattern}", offset={end})')
    else:
        out.append("No more matches to show.")
    return "\n".join(out)


def passages(found: list[tuple[str, float, str]], query: str) -> str:
    """Search hits (file label, score, text) as the model reads them."""
    if not found:
        return f"No semantic matches found for query: '{query}'"
    out = []
    for number, (label, score, text) in enumerate(found, start=1):
        lines = text.strip().splitlines()
        shown = [f"  {line}" for line in lines[:PASSAGE_LINES]]
        if len(lines) > PASSAGE_LINES:
            shown.append(f"  ... [truncated {len(lines) - PASSAGE_LINES} more lines]")
        out.append(f"\n=== {label} (passage #{number}) (score: {score:.3f}) ===\n" + "\n".join(shown))
    return "\n".join(out)
