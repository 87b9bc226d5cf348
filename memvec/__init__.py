"""memvec: vector-search memory for LLM agents (core, recall and archival tiers)."""

from memvec.config import MemoryConfig
from memvec.errors import (
    AgentExistsError,
    CoreMemoryError,
    IndexFileError,
    InvalidInputError,
    MemvecError,
    ModelCallError,
    ModelMismatchError,
    NotFoundError,
    StoreError,
)
from memvec.memory import Memory
from memvec.types import (
    VERSION,
    Citation,
    CoreBlock,
    Fusion,
    Hit,
    InsertResult,
    NewRecord,
    Record,
    SearchFilters,
    SearchMode,
    SearchRequest,
    Tier,
)

__version__ = VERSION

__all__ = [
    "AgentExistsError",
    "Citation",
    "CoreBlock",
    "CoreMemoryError",
    "Fusion",
    "Hit",
    "IndexFileError",
    "InsertResult",
    "InvalidInputError",
    "Memory",
    "MemoryConfig",
    "MemvecError",
    "ModelCallError",
    "ModelMismatchError",
    "NewRecord",
    "NotFoundError",
    "Record",
    "SearchFilters",
    "SearchMode",
    "SearchRequest",
    "StoreError",
    "Tier",
]
