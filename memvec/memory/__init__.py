"""The Python API: one `Memory` per home, with core, recall and archival tiers per agent.

from memvec import Memory
with Memory.open("./indexes") as mem:
    mem.archival("my-app").insert("Paris is the capital of France", source_url="https://...")
    hits = mem.archival("my-app").search("capital of France")
"""

from __future__ import annotations

from memvec.memory.door import STORE_SCHEMA_VERSION, Memory
from memvec.memory.names import validate_agent

__all__ = ["STORE_SCHEMA_VERSION", "Memory", "validate_agent"]
