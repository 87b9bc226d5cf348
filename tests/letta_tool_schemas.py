"""Letta's own memory tools' arguments, pinned: what an agent or MCP host written for Letta sends.

Read from letta-ai/letta, `letta/functions/function_sets/base.py` at commit
0f6f52cbd20050d494cbefdce04c0d7357866572 (the Python signatures Letta builds its tool schemas from;
Optional[...] = None is not required). Only the tools memvec serves under the same name are here.
Each tool: {argument: JSON type (an enum as a list of its values)}, and the required arguments.
"""

from __future__ import annotations

from typing import Any

LETTA_SOURCE = ("letta-ai/letta", "letta/functions/function_sets/base.py", "0f6f52cbd20050d494cbefdce04c0d7357866572")

LETTA_TOOLS: dict[str, dict[str, Any]] = {
    "conversation_search": {
        "arguments": {
            "query": "string",
            "roles": "array",
            "limit": "integer",
            "start_date": "string",
            "end_date": "string",
        },
        "required": [],
    },
    "archival_memory_insert": {"arguments": {"content": "string", "tags": "array"}, "required": ["content"]},
    "archival_memory_search": {
        "arguments": {
            "query": "string",
            "tags": "array",
            "tag_match_mode": ["any", "all"],
            "top_k": "integer",
            "start_datetime": "string",
            "end_datetime": "string",
        },
        "required": ["query"],
    },
    "core_memory_append": {"arguments": {"label": "string", "content": "string"}, "required": ["label", "content"]},
    "core_memory_replace": {
        "arguments": {"label": "string", "old_content": "string", "new_content": "string"},
        "required": ["label", "old_content", "new_content"],
    },
    "memory_replace": {
        "arguments": {"label": "string", "old_str": "string", "new_str": "string"},
        "required": ["label", "old_str", "new_str"],
    },
    "memory_insert": {
        "arguments": {"label": "string", "new_str": "string", "insert_line": "integer"},
        "required": ["label", "new_str"],
    },
    "memory_rethink": {"arguments": {"label": "string", "new_memory": "string"}, "required": ["label", "new_memory"]},
    "memory_finish_edits": {"arguments": {}, "required": []},
}
