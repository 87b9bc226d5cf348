"""Numbered schema migrations. Append new ones; never edit an applied one."""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TABLE records (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        agent TEXT NOT NULL,
        tier TEXT NOT NULL CHECK (tier IN ('archival', 'recall')),
        text TEXT NOT NULL,
        dedup_key TEXT NOT NULL,
        role TEXT,
        session_id TEXT,
        turn_id TEXT,
        source_url TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        embedding BLOB,
        embedding_model TEXT,
        UNIQUE (agent, tier, dedup_key)
    );
    CREATE INDEX records_by_time ON records (agent, tier, created_at);
    CREATE INDEX records_by_session ON records (agent, tier, session_id);

    CREATE TABLE record_tags (
        record_id INTEGER NOT NULL REFERENCES records (id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        PRIMARY KEY (record_id, tag)
    );
    CREATE INDEX record_tags_by_tag ON record_tags (tag, record_id);

    -- The change log lets an index saved at change N catch up without a rebuild.
    CREATE TABLE changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        agent TEXT NOT NULL,
        tier TEXT NOT NULL,
        record_id INTEGER NOT NULL,
        op TEXT NOT NULL CHECK (op IN ('add', 'delete'))
    );
    CREATE INDEX changes_by_partition ON changes (agent, tier, seq);

    CREATE TABLE core_blocks (
        agent TEXT NOT NULL,
        label TEXT NOT NULL,
        value TEXT NOT NULL,
        char_limit INTEGER NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        description TEXT NOT NULL DEFAULT '',
        updated_at TEXT NOT NULL,
        PRIMARY KEY (agent, label)
    );
    """,
    ),
    (
        2,
        """
    ALTER TABLE records ADD COLUMN untrusted INTEGER NOT NULL DEFAULT 0;

    CREATE TABLE agents (
        name TEXT PRIMARY KEY,
        settings TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        in_context TEXT NOT NULL DEFAULT '[]',
        turn INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    ),
    (
        3,
        """
    -- index-only text: what precedes a record in its session (see memvec.embed.base.embed_records)
    ALTER TABLE records ADD COLUMN context TEXT;
    """,
    ),
    (
        4,
        """
    -- free-form JSON a client attaches to a block (Letta's block metadata)
    ALTER TABLE core_blocks ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
    """,
    ),
    (
        5,
        """
    -- every change of a core block, with the whole block before and after it (memvec.store.blocks)
    CREATE TABLE block_history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        agent TEXT NOT NULL,
        label TEXT NOT NULL,
        changed_at TEXT NOT NULL,
        actor TEXT NOT NULL,
        op TEXT NOT NULL,
        old_block TEXT,
        new_block TEXT,
        undone_by INTEGER
    );
    CREATE INDEX block_history_by_label ON block_history (agent, label, seq);
    """,
    ),
    (
        6,
        """
    -- a record past expires_at is never returned and is purged (memvec.engine.engine.Engine.sweep)
    ALTER TABLE records ADD COLUMN expires_at TEXT;
    CREATE INDEX records_by_expiry ON records (agent, tier, expires_at);
    """,
    ),
    (
        7,
        """
    -- versions of a passage (memvec.store.sql.SQLStore._close_version): event time valid_from/valid_to
    -- apart from record time created_at (valid_from NULL: created_at),
    -- a superseded version keeps its row, linked both ways
    ALTER TABLE records ADD COLUMN valid_from TEXT;
    ALTER TABLE records ADD COLUMN valid_to TEXT;
    ALTER TABLE records ADD COLUMN supersedes INTEGER;
    ALTER TABLE records ADD COLUMN superseded_by INTEGER;
    CREATE INDEX records_by_validity ON records (agent, tier, valid_to);
    """,
    ),
    (
        8,
        """
    -- sleep-time consolidation runs (memvec.engine.consolidation): what each added, superseded and
    -- edited, as JSON, so a run can be reviewed and undone whole
    CREATE TABLE consolidation_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        agent TEXT NOT NULL,
        model TEXT NOT NULL,
        started_at TEXT NOT NULL,
        through_message INTEGER,
        diff TEXT NOT NULL DEFAULT '{}',
        undone_at TEXT
    );
    CREATE INDEX consolidation_runs_by_agent ON consolidation_runs (agent, id);
    """,
    ),
    (
        9,
        """
    -- one writer per agent across servers: the reply loop holds its agent's lease (memvec.engine.lease)
    CREATE TABLE agent_leases (agent TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at TEXT NOT NULL);
    """,
    ),
    (
        10,
        """
    -- archival near-repeats found by an indexed lookup (memvec.index.duplicates.content_key)
    ALTER TABLE records ADD COLUMN near_key TEXT;
    CREATE INDEX records_by_near_key ON records (agent, tier, near_key);
    """,
    ),
    (
        11,
        """
    -- the memory browser's signed-out sessions, until their cookie would have expired anyway
    CREATE TABLE revoked_sessions (nonce TEXT PRIMARY KEY, expires_at TEXT NOT NULL);
    """,
    ),
    (
        12,
        """
    -- shared blocks (memvec.store.shared_blocks): a block owned by `~block-<hex>`, attached to agents
    CREATE TABLE block_attachments (
        agent TEXT NOT NULL,
        label TEXT NOT NULL,
        owner TEXT NOT NULL,
        attached_at TEXT NOT NULL,
        PRIMARY KEY (agent, label)
    );
    CREATE INDEX block_attachments_by_owner ON block_attachments (owner, agent);
    """,
    ),
    (
        13,
        """
    -- documents (memvec.store.documents): a file's text, whose chunks are archival records citing it
    CREATE TABLE documents (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        media_type TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        text TEXT NOT NULL,
        pages INTEGER,
        title TEXT,
        chunks INTEGER NOT NULL,
        blocks TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        replaced_at TEXT,
        replaced_by INTEGER
    );
    CREATE INDEX documents_by_owner ON documents (owner, name, id);
    CREATE INDEX documents_by_hash ON documents (owner, content_hash);
    -- folders (Letta's /v1/folders): documents owned by `~<folder id>`, copied into attached agents
    CREATE TABLE folders (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT,
        instructions TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE folder_attachments (
        folder_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        attached_at TEXT NOT NULL,
        PRIMARY KEY (folder_id, agent)
    );
    CREATE INDEX folder_attachments_by_agent ON folder_attachments (agent, folder_id);
    ALTER TABLE records ADD COLUMN document_id INTEGER;
    ALTER TABLE records ADD COLUMN document TEXT;
    CREATE INDEX records_by_document ON records (document_id);
    """,
    ),
    (
        14,
        """
    -- a period's records read from one index: its time range and which versions are current
    CREATE INDEX records_by_time_and_validity ON records (agent, tier, created_at, valid_to, superseded_by);
    DROP INDEX records_by_time;
    """,
    ),
    (
        15,
        """
    -- message sends running or answered, so a client's retry gets the first attempt's answer
    CREATE TABLE message_requests (
        key TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('running', 'done')),
        response TEXT,
        started_at TEXT NOT NULL
    );
    CREATE INDEX message_requests_by_agent ON message_requests (agent);
    CREATE INDEX message_requests_by_start ON message_requests (started_at);
    """,
    ),
    (
        16,
        """
    -- who wrote a record: 'agent' for the agent loop's own messages and tool calls (trusted by who
    -- wrote them), NULL for everything from outside (checked by its text)
    ALTER TABLE records ADD COLUMN written_by TEXT;
    """,
    ),
    (
        17,
        """
    -- agents' Letta ids and display names, apart from the handle (the old name) their data is keyed by
    CREATE TABLE agent_identities (handle TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL);
    INSERT INTO agent_identities (handle, id, name)
    SELECT handle,
        CASE WHEN handle GLOB 'agent-????????-????-????-????-????????????' THEN handle
        ELSE 'agent-' || lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
            || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + abs(random() % 4), 1)
            || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))) END,
        handle
    FROM (SELECT name AS handle FROM agents UNION SELECT agent FROM records
          UNION SELECT agent FROM core_blocks WHERE agent NOT LIKE '~%')
    """,
    ),
    (
        18,
        """
    -- custom tools (Letta's /v1/tools): Python source and the schema a model sees, unique by name
    CREATE TABLE tools (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        spec TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    ),
    (
        19,
        """
    -- tool calls a stopped reply left for the client to answer (its return, or an approval)
    ALTER TABLE agents ADD COLUMN pending_calls TEXT NOT NULL DEFAULT '[]';
    """,
    ),
    (
        20,
        """
    -- what an agent has open of its folders' files, and which lines (Letta's files_agents): a file
    -- with no row here is open at its start
    CREATE TABLE agent_files (
        agent TEXT NOT NULL,
        document_id INTEGER NOT NULL,
        is_open INTEGER NOT NULL,
        start_line INTEGER,
        end_line INTEGER,
        accessed_at TEXT NOT NULL,
        PRIMARY KEY (agent, document_id)
    );
    CREATE INDEX agent_files_by_document ON agent_files (document_id);
    -- the name a file was uploaded as, where it is kept under another (a renamed duplicate)
    ALTER TABLE documents ADD COLUMN original_name TEXT;
    """,
    ),
    (
        21,
        """
    -- what a Letta client is shown of a recall message beyond its text: the otid it gave (or one made
    -- for it), the run and step it was part of, and for a tool call its name, arguments and id
    CREATE TABLE message_meta (
        record_id INTEGER PRIMARY KEY REFERENCES records (id) ON DELETE CASCADE,
        run_id TEXT,
        meta TEXT NOT NULL
    );
    CREATE INDEX message_meta_by_run ON message_meta (run_id);
    """,
    ),
    (
        22,
        """
    -- Letta's runs: one per send (answered, streamed or in the background) and how it ended
    CREATE TABLE agent_runs (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        status TEXT NOT NULL,
        background INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        completed_at TEXT,
        stop_reason TEXT,
        usage TEXT,
        error TEXT,
        message_types TEXT
    );
    CREATE INDEX agent_runs_by_agent ON agent_runs (agent, created_at);
    """,
    ),
    (
        23,
        """
    -- Letta's conversations: threads of one agent, each with its own context over the agent's memory
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        summary TEXT,
        model TEXT,
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_message_at TEXT
    );
    CREATE INDEX conversations_by_agent ON conversations (agent, created_at);
    """,
    ),
]

LATEST_VERSION = MIGRATIONS[-1][0]
_UNCOMMENTED = {
    1: "records, their tags, the change log and core blocks",
    2: "records' untrusted flag and agents' settings and state",
}


def describe(version: int) -> str:
    """What migration `version` adds: its first SQL comment (the migrations say why they exist)."""
    script = dict(MIGRATIONS)[version]
    comments = [line.strip()[2:].strip() for line in script.splitlines() if line.strip().startswith("--")]
    return _UNCOMMENTED.get(version) or (comments[0] if comments else f"schema {version}")


def pending(applied: set[int]) -> list[tuple[int, str]]:
    """The migrations a store that has `applied` would get when opened, with what each adds."""
    return [(version, describe(version)) for version, _ in MIGRATIONS if version not in applied]
