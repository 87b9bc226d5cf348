"""The store interface: the transactional source of truth that every index is derived from."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from memvec.exchange.consolidation import ConsolidationRun
from memvec.store.forget_log import Tombstone
from memvec.types import (
    AgentIdentity,
    AgentSettings,
    AgentState,
    BlockChange,
    Citation,
    Clock,
    CoreBlock,
    Document,
    Folder,
    NewRecord,
    Record,
    SearchFilters,
    Tier,
)
from memvec.types.conversations import Conversation
from memvec.types.files import FileViewState
from memvec.types.messages import MessageMeta
from memvec.types.records import WrittenBy
from memvec.types.runs import AgentRun
from memvec.types.tools import ToolDef

Ids = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PreparedRecord:
    """A validated record with everything the store writes in one transaction."""

    record: NewRecord
    dedup_key: str
    created_at: datetime
    embedding: npt.NDArray[np.float32]
    model_id: str
    context: str | None = None
    untrusted: bool = False  # what the guard (run by the engine) said of the text
    near_key: str | None = None  # archival: memvec.index.duplicates.content_key of the text
    written_by: WrittenBy | None = None  # "agent": the agent loop's own record, trusted by who wrote it


@dataclass(frozen=True, slots=True, kw_only=True)
class NewDocument:
    """A document row to write (its chunks are written as records beside it)."""

    owner: str
    name: str
    content_hash: str
    media_type: str
    size_bytes: int
    text: str
    pages: int | None
    title: str | None
    chunks: int
    blocks: list[tuple[int, int, int | None, tuple[str, ...]]]  # (start, end, page, headings): to cut it again
    created_at: datetime
    original_name: str | None = None  # the name it was uploaded as, when it is kept under another


@dataclass(frozen=True, slots=True)
class Change:
    seq: int
    record_id: int
    op: Literal["add", "delete"]


@dataclass(frozen=True, slots=True)
class EmbeddingBatch:
    ids: Ids
    vectors: npt.NDArray[np.float32]
    texts: list[str]
    models: list[str | None]
    contexts: list[str | None]
    created_at: list[str]
    sessions: list[str | None]
    roles: list[str | None]


class Store(Protocol):
    clock: Clock  # what "now" is for record times, validity and expiry (the wall clock, or a test's)

    def close(self) -> None: ...

    def checkpoint(self) -> None:
        """Move what was committed out of any write-ahead file into the store's own, so deleted text
        lingers in no file (SQLite's WAL; a no-op where the server owns its log). Best effort."""
        ...

    def healthy(self) -> bool:
        """Whether the store answers right now (a down database: False, never an exception)."""
        ...

    def note_forgotten(self, tombstones: Sequence[Tombstone]) -> None:
        """Log what the current transaction deletes on purpose, once it commits (memvec.store.forget_log)."""
        ...

    def connection_stats(self) -> dict[str, int]:
        """This process's connection counts since it opened the store: `opened` (reconnects included),
        `failed` (attempts that failed), `lost` (found broken and replaced). Empty for SQLite."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Several writes of this thread as one transaction: all commit, or none."""
        ...

    def in_transaction(self) -> bool:
        """Whether this thread is inside `transaction()`: what it wrote is not committed yet."""
        ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def existing_ids(self, agent: str, tier: Tier, keys: Sequence[str]) -> dict[str, int]: ...

    def insert(self, rows: Sequence[PreparedRecord]) -> list[tuple[int, bool]]: ...

    def get(self, agent: str, ids: Sequence[int]) -> list[Record]: ...

    def delete_many(self, agent: str, ids: Sequence[int]) -> int: ...

    def expired_ids(
        self, agent: str, tier: Tier, now: datetime, created_before: datetime | None = None
    ) -> list[int]: ...

    def list_records(
        self,
        agent: str,
        tier: Tier,
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = False,
        filters: SearchFilters | None = None,
        after: int | None = None,
        before: int | None = None,
    ) -> list[Record]:
        """In time order; `after`/`before` are record ids (cursors: the records past/before that one)."""
        ...

    def filter_ids(self, agent: str, tier: Tier, filters: SearchFilters, *, all_versions: bool = False) -> Ids:
        """Ids passing `filters`, among the versions valid now (or at `filters.as_of`) unless `all_versions`."""
        ...

    def ids(self, agent: str, tier: Tier) -> Ids:
        """Every stored id of the tier (every version): what its indexes must hold."""
        ...

    def near_key_ids(self, agent: str, tier: Tier, keys: Sequence[str], now: datetime) -> dict[str, int]:
        """The oldest current record with each near key (content key), by key."""
        ...

    def time_span(self, agent: str, tier: Tier) -> tuple[datetime, datetime] | None:
        """The earliest and latest `created_at` of the tier's records, every version (None: no record)."""
        ...

    def next_end(self, agent: str, tier: Tier, now: datetime) -> datetime | None:
        """The earliest `valid_to` still ahead of `now`."""
        ...

    def add_document_row(self, doc: NewDocument) -> int: ...

    def replace_document(self, old: int, new: int, at: datetime) -> int:
        """Document `old` is replaced by `new` at `at`: its chunks' current versions end there."""
        ...

    def documents(self, owner: str, *, include_replaced: bool = False) -> list[Document]: ...

    def current_document(
        self, owner: str, *, name: str | None = None, content_hash: str | None = None
    ) -> Document | None:
        """The owner's current document of that name (or with that content hash)."""
        ...

    def document(self, document_id: int) -> Document | None: ...

    def orphan_documents(self) -> list[Document]:
        """Documents owned by a folder that no longer exists."""
        ...

    def document_text(self, document_id: int) -> str | None: ...

    def document_blocks(self, document_id: int) -> list[tuple[int, int, int | None, tuple[str, ...]]]: ...

    def document_versions(self, document_id: int) -> list[int]:
        """Every version of the file `document_id` is a version of (same owner and name), oldest first."""
        ...

    def chunk_ids(self, document_ids: Sequence[int]) -> dict[str, list[int]]:
        """The records citing the documents, by agent."""
        ...

    def delete_document_rows(self, document_ids: Sequence[int]) -> None: ...

    def put_folder(self, folder: Folder, *, create: bool) -> None:
        """NameTakenError when another folder has its name."""
        ...

    def folders(self) -> list[Folder]: ...

    def folder(self, folder_id: str) -> Folder | None: ...

    def folder_agents(self, folder_id: str) -> list[str]: ...

    def agent_folders(self, agent: str) -> list[str]: ...

    def attach_folder(self, folder_id: str, agent: str, at: datetime) -> bool: ...

    def detach_folder(self, folder_id: str, agent: str) -> bool: ...

    def delete_folder_row(self, folder_id: str) -> None: ...

    def own_blocks(self, label: str | None = None) -> list[tuple[str, CoreBlock]]: ...

    # Letta's runs (memvec.store.agent_runs)
    def put_agent_run(self, run: AgentRun) -> None: ...

    def agent_run(self, run_id: str) -> AgentRun | None: ...

    def agent_runs(self, agents: Sequence[str], *, limit: int, newest_first: bool = True) -> list[AgentRun]: ...

    def run_message_ids(self, run_id: str) -> list[int]: ...

    # Letta's conversations (memvec.store.conversations)
    def add_conversation(self, conversation: Conversation) -> None: ...

    def conversation(self, conversation_id: str) -> Conversation | None: ...

    def conversations(self, agents: Sequence[str] | None, *, newest_first: bool = False) -> list[Conversation]: ...

    def describe_conversation(
        self, conversation_id: str, summary: str | None, model: str | None, at: datetime
    ) -> bool: ...

    def put_conversation_state(self, conversation_id: str, state: AgentState, messaged_at: datetime) -> bool: ...

    def delete_conversation(self, conversation_id: str) -> bool: ...

    # recall messages' Letta identity (memvec.store.message_meta)
    def put_message_meta(self, record_id: int, meta: MessageMeta) -> None: ...

    def message_meta(self, record_ids: Sequence[int]) -> dict[int, MessageMeta]: ...

    # agents' views of their folders' files (memvec.store.agent_files)
    def file_views(self, agent: str) -> dict[int, FileViewState]: ...

    def put_file_views(self, agent: str, views: dict[int, FileViewState]) -> None: ...

    def closed_ids(self, agent: str, tier: Tier, now: datetime) -> Ids:
        """Versions that are not current at `now` (superseded, or ended by their valid_to)."""
        ...

    def merge_into(self, agent: str, record_id: int, tags: Sequence[str], citation: Citation) -> None:
        """Add a repeat's tags and the citation fields the record lacks (inside the caller's transaction)."""
        ...

    def versions(self, agent: str, record_id: int) -> list[Record]:
        """Every version of the passage `record_id` belongs to, oldest first (empty: no such record)."""
        ...

    def count(self, agent: str, tier: Tier) -> int: ...

    def texts(self, agent: str, tier: Tier, filters: SearchFilters | None = None) -> Iterator[tuple[int, str]]: ...

    def last_in_session(self, agent: str, tier: Tier, session_id: str) -> str | None: ...

    def last_change(self, agent: str, tier: Tier) -> int: ...

    def changes_since(self, agent: str, tier: Tier, seq: int) -> list[Change]: ...

    def embeddings(
        self, agent: str, tier: Tier, ids: Sequence[int] | None = None, *, batch: int = 4096
    ) -> Iterator[EmbeddingBatch]: ...

    def set_embeddings(self, ids: Sequence[int], vectors: npt.NDArray[np.float32], model_id: str) -> None: ...

    def partitions(self) -> list[tuple[str, Tier]]: ...

    def agents(self) -> list[str]: ...

    def has_agent(self, name: str) -> bool: ...

    def blocks(self, agent: str) -> list[CoreBlock]: ...

    def put_block(self, agent: str, block: CoreBlock, *, actor: str = "python", op: str = "put") -> None: ...

    def compare_and_set_block(
        self, agent: str, label: str, expected: str, value: str, *, actor: str = "python", op: str = "edit"
    ) -> bool: ...

    def delete_block(self, agent: str, label: str, *, actor: str = "python") -> bool: ...

    def block_history(self, agent: str, label: str | None = None) -> list[BlockChange]: ...

    def shared_blocks(self) -> list[tuple[str, CoreBlock]]: ...

    def block_owner(self, agent: str, label: str) -> str: ...

    def attachments(self, agent: str) -> dict[str, str]: ...

    def block_holders(self, owner: str) -> list[str]: ...

    def attach_block(self, agent: str, owner: str) -> bool: ...

    def detach_block(self, agent: str, owner: str) -> bool: ...

    def delete_shared_block(self, owner: str) -> bool: ...

    def forget_block_history(self, agent: str, label: str | None = None) -> int: ...

    def restore_blocks(
        self, agent: str, blocks: Sequence[CoreBlock], history: Sequence[BlockChange]
    ) -> dict[int, int]: ...

    def restore_run(self, agent: str, run: ConsolidationRun) -> None: ...

    def claim_request(
        self, key: str, agent: str, now: datetime, *, fresh: bool
    ) -> tuple[Literal["claimed", "running", "done"], str | None]:
        """Claim a message request for a run, or say it is running or answered (memvec.store.requests)."""
        ...

    def finish_request(self, key: str, response: str) -> None: ...

    def drop_request(self, key: str) -> None: ...

    def forget_requests(self, agent: str) -> None: ...

    def revoke_session(self, nonce: str, expires_at: datetime) -> None: ...

    def session_revoked(self, nonce: str) -> bool: ...

    def undo_block(self, agent: str, label: str, *, actor: str = "python") -> CoreBlock | None: ...

    def start_run(self, agent: str, model: str, through_message: int | None, started_at: datetime) -> int: ...

    def finish_run(self, run: ConsolidationRun) -> None: ...

    def runs(self, agent: str) -> list[ConsolidationRun]: ...

    def mark_run_undone(self, run_id: int) -> None: ...

    def forget_in_runs(self, agent: str, record_ids: Sequence[int]) -> None: ...

    def acquire_lease(self, agent: str, holder: str, now: datetime, ttl_s: float) -> bool: ...

    def renew_lease(self, agent: str, holder: str, now: datetime, ttl_s: float) -> bool: ...

    def release_lease(self, agent: str, holder: str) -> None: ...

    def reopen_version(self, agent: str, record_id: int, superseded_by: int, valid_to: datetime | None) -> None: ...

    def storage_bytes(self) -> int: ...

    def get_agent(self, name: str) -> tuple[AgentSettings, AgentState] | None: ...

    def put_agent(self, settings: AgentSettings, state: AgentState | None = None) -> None: ...

    def put_agent_state(self, name: str, state: AgentState) -> bool: ...

    def agent_names(self) -> list[str]: ...

    def delete_agent(self, name: str) -> list[tuple[int, str]]: ...

    def claim_identity(self, identity: AgentIdentity) -> bool: ...

    def handle_taken(self, handle: str) -> bool: ...

    def identity(self, handle: str) -> AgentIdentity: ...

    def identities(self) -> dict[str, AgentIdentity]: ...

    def handle_of(self, agent_id: str) -> str | None: ...

    def rename_agent(self, handle: str, name: str) -> None: ...

    def create_tool(self, tool: ToolDef) -> ToolDef: ...

    def upsert_tool(self, tool: ToolDef) -> ToolDef: ...

    def replace_tool(self, tool: ToolDef) -> bool: ...

    def tool(self, tool_id: str) -> ToolDef | None: ...

    def tool_named(self, name: str) -> ToolDef | None: ...

    def tools(self) -> list[ToolDef]: ...

    def delete_tool(self, tool_id: str) -> bool: ...
