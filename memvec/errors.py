"""The one error tree of memvec.

Every error memvec raises on purpose derives from :class:`MemvecError`::

    MemvecError
    ├── InvalidInputError        bad input from a caller; nothing was written (CLI exit 2)
    │   ├── CoreMemoryError      a core-memory edit that cannot be applied (over limit, read-only, ...)
    │   ├── AgentExistsError     an agent of that name exists already (HTTP 409)
    │   ├── NameTakenError       another folder has that name (HTTP 409)
    │   ├── VersionConflictError a passage version that is no longer current, or a second current copy (HTTP 409)
    │   ├── ModelMismatchError   the home was built with another embedding model
    │   ├── ModelExportError     a model cannot be turned into an ONNX backend (nothing was written)
    │   └── UnreadableDocumentError a file that is empty, too large, corrupt or in a format memvec does not read
    ├── NotFoundError            an agent, record or block that does not exist (CLI exit 2)
    ├── StoreError               the transactional store failed (CLI exit 1)
    │   └── StoreUnavailableError the database cannot be reached right now (HTTP 503, CLI exit 4); retry later
    ├── PortInUseError           the address `memvec serve` should listen on is taken (CLI exit 6)
    ├── ServerStartError         a worker of `memvec serve --workers N` exited as it started
    ├── AgentBusyError           another server runs this agent's reply loop right now (HTTP 409); retry
    ├── ModelCallError           the LLM provider failed or refused a call (HTTP 502, CLI exit 1)
    ├── ServiceCallError         a memvec server answered a client (the framework retrievers) with an error
    └── IndexFileError           an index file cannot be used; it is rebuilt from the store

Callers who only want "my fault or not" can catch ``InvalidInputError`` / ``NotFoundError``
(the caller's fault) separately from everything else.
"""

from __future__ import annotations


class MemvecError(Exception):
    """Base class of every error memvec raises on purpose."""


class InvalidInputError(MemvecError, ValueError):
    """The caller passed something memvec refuses; nothing was written."""


class CoreMemoryError(InvalidInputError):
    """A core-memory edit was refused (unknown label, over the char limit, read-only block)."""


class AgentExistsError(InvalidInputError):
    """An agent of that name exists already (it has settings, core blocks or records); nothing was written."""


class NameTakenError(InvalidInputError):
    """Another folder has that name; nothing was written."""


class VersionConflictError(InvalidInputError):
    """An update of a passage version that was already superseded (update its current version), or one
    whose new text is that of another current passage; nothing was written."""


class ModelMismatchError(InvalidInputError):
    """The requested embedding model differs from the one the memory home was built with."""


class ModelExportError(InvalidInputError):
    """A model cannot be exported to ONNX (not a sentence-transformers model, or a module the ONNX
    backend does not implement); the cache is left as it was. The torch backend may still load it."""


class QuantizationRefusedError(ModelExportError):
    """The int8 graph's vectors disagree with the fp32 graph's on sample texts (the model quantizes
    badly): a default int8 backend falls back to fp32 ONNX, whose model id says so."""


class UnreadableDocumentError(InvalidInputError):
    """A file handed to `add_document` cannot be read: empty, over the size limits, corrupt, without
    text, or in a format memvec does not read (plain text, Markdown, HTML, PDF); nothing was written."""


class NotFoundError(MemvecError, LookupError):
    """An agent, record or core-memory block does not exist."""


class StoreError(MemvecError):
    """The transactional store failed or is from an unknown schema version."""


class StoreUnavailableError(StoreError):
    """The database cannot be reached (down, restarting, failing over) or no connection came free in
    time. Nothing half-written: a write that raised this either committed whole or not at all, and
    retrying it is safe for inserts (the dedup key returns the first attempt's record)."""


class AgentBusyError(MemvecError):
    """The agent's reply loop runs on another server (or thread) and did not finish within the wait;
    nothing was written. Send the message again (HTTP 409 with Retry-After)."""


class PortInUseError(MemvecError):
    """The address `memvec serve` was told to listen on is taken (by another server, most likely);
    checked before the model loads. The CLI exits 6."""


class ServerStartError(MemvecError):
    """A worker of `memvec serve --workers N` exited as it started (the home, a key file): the
    supervisor stops the others and exits."""


class ModelCallError(MemvecError):
    """The LLM provider (through litellm) failed, refused the request or is unknown. `public` is what
    may be shown to an HTTP client (the provider's own text may carry its URLs or account details, so
    the service logs the whole message and answers this one)."""

    def __init__(self, message: str, *, public: str | None = None) -> None:
        super().__init__(message)
        self.public = public or message


class ServiceCallError(MemvecError):
    """A memvec server answered with an error or could not be reached; `status` is the HTTP status
    (None: no answer) and the message carries the server's own detail."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class IndexFileError(MemvecError):
    """An index file is missing, corrupt or does not match its manifest; it must be rebuilt."""


class OldIndexFormatError(IndexFileError):
    """Index files written by an older memvec in a format this one does not read: not damage. They
    are rebuilt from the store when next opened (`memvec verify` reports them, exit 0)."""
