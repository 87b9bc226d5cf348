"""A file as numbered lines: what an agent sees of a file in its folders, and what it greps.

Lines are the file's non-blank lines, numbered from 1, each stripped of its surrounding space (code
keeps its indentation). A view of them starts with a header saying which part of the file it shows,
the way Letta's file blocks read (`[Viewing file start (out of N lines)]`, `[Viewing lines 6 to 10
(out of N lines)]`), and is cut to the agent's per-file character limit with a note that says so.
"""

from __future__ import annotations

from pathlib import PurePath

CODE_SUFFIXES = frozenset(
    {".py", ".pyi", ".js", ".jsx", ".mjs", ".ts", ".tsx", ".java", ".kt", ".go", ".rs", ".c", ".h", ".cc", ".cpp"}
    | {".hpp", ".cs", ".rb", ".php", ".swift", ".scala", ".sh", ".sql", ".lua", ".r", ".m", ".yaml", ".yml"}
)
TRUNCATED = "...[TRUNCATED]\n"
TRUNCATED_NOTE = (
    "[This view is cut at the per-file character limit: open fewer lines (offset, length) to see the rest.]"
)


def file_lines(name: str, text: str) -> list[str]:
    """The file's non-blank lines, stripped (right-stripped only in code, whose indentation means something)."""
    keep_indent = PurePath(name).suffix.lower() in CODE_SUFFIXES
    lines = (line.rstrip() if keep_indent else line.strip() for line in text.splitlines())
    return [line for line in lines if line]


def line_window(name: str, lines: list[str], start: int | None = None, end: int | None = None) -> str:
    """Lines `start` (0-based) up to `end` (exclusive), numbered, under a header; the whole file
    without either. ValueError when `start` is past the last line or the range is empty."""
    total = len(lines)
    if start is None and end is None:
        header, first, last = f"[Viewing file start (out of {total} lines)]", 0, total
    else:
        first = start or 0
        if first >= total:
            raise ValueError(f"{name} has only {total} lines, but offset {first} (line {first + 1}) was asked for")
        if end is not None and end <= first:
            raise ValueError(f"an empty range of {name}: length must be at least 1")
        last = total if end is None else min(end, total)
        shown = "end" if end is None else str(last)
        header = f"[Viewing lines {first + 1} to {shown} (out of {total} lines)]"
    numbered = (f"{number}: {line}" for number, line in enumerate(lines[first:last], start=first + 1))
    return "\n".join([header, *numbered])


def cut_to(value: str, limit: int) -> str:
    """`value` at most `limit` characters, ending with a note that it was cut when it was."""
    if len(value) <= limit:
        return value
    warning = TRUNCATED + TRUNCATED_NOTE
    return value[: max(0, limit - len(warning))] + warning[:limit]
