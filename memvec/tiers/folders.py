"""Folders (Letta's `/v1/folders`): named sets of files, attached to agents. Each attached agent's
archival memory holds the folder's chunks, citing the folder; a file uploaded, changed or deleted in
the folder is so for every agent it is attached to."""

from __future__ import annotations

import builtins
import uuid
from datetime import UTC, datetime
from typing import Any

from memvec.engine import folders
from memvec.engine.documents import SAME_NAME, DocumentInput, add_document, delete_document, document_of
from memvec.engine.engine import Engine
from memvec.errors import InvalidInputError, NotFoundError
from memvec.types import Document, DocumentReport, Folder


class Folders:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(
        self,
        name: str,
        *,
        description: str | None = None,
        instructions: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Folder:
        """A new empty folder (NameTakenError when another has the name)."""
        now = datetime.now(UTC)
        folder = Folder(
            id=f"source-{uuid.uuid4()}",
            name=name,
            description=description,
            instructions=instructions,
            metadata=metadata or {},
            created_at=now,
            updated_at=now,
        )
        self._engine.store.put_folder(folder, create=True)
        return folder

    def list(self) -> builtins.list[Folder]:
        return self._engine.store.folders()

    def get(self, folder_id: str) -> Folder:
        return folders.folder_of(self._engine, folder_id)

    def by_name(self, name: str) -> Folder:
        for folder in self.list():
            if folder.name == name:
                return folder
        raise NotFoundError(f"no folder named {name!r}")

    def modify(self, folder_id: str, changes: dict[str, Any]) -> Folder:
        """Change its name, description, instructions or metadata (the chunks already copied keep
        citing the old name)."""
        updated = Folder.model_validate(
            {**self.get(folder_id).model_dump(), **changes, "updated_at": datetime.now(UTC)}
        )
        self._engine.store.put_folder(updated, create=False)
        return updated

    def delete(self, folder_id: str) -> int:
        """Delete the folder, its files and every agent's copies of their chunks; returns how many chunks."""
        return folders.delete(self._engine, folder_id)

    def upload(
        self,
        folder_id: str,
        name: str,
        data: bytes,
        *,
        media_type: str | None = None,
        duplicate_handling: str = "replace",
    ) -> DocumentReport:
        """Add a file to the folder (and so to every agent it is attached to). The same content again
        adds nothing. A file of the same name with other content: `replace` it (the old chunks stay
        as closed versions), `skip` it, `error` (InvalidInputError), or add it with a `suffix`ed name."""
        folder = self.get(folder_id)
        if duplicate_handling not in SAME_NAME:
            raise InvalidInputError(f"duplicate_handling is one of {', '.join(SAME_NAME)}")
        item = DocumentInput(
            owner=folders.folder_owner(folder_id),
            name=name,
            data=data,
            media_type=media_type,
            folder=(folder.id, folder.name),
            same_name=duplicate_handling,
        )
        return add_document(self._engine, item)

    def files(self, folder_id: str) -> builtins.list[Document]:
        self.get(folder_id)
        return self._engine.store.documents(folders.folder_owner(folder_id))

    def file(self, folder_id: str, document_id: int) -> Document:
        return document_of(self._engine, folders.folder_owner(folder_id), document_id)

    def file_text(self, folder_id: str, document_id: int) -> str:
        self.file(folder_id, document_id)
        return self._engine.store.document_text(document_id) or ""

    def delete_file(self, folder_id: str, document_id: int) -> int:
        """Delete a file (every version) and its chunks from every agent; returns how many chunks."""
        return delete_document(self._engine, folders.folder_owner(folder_id), document_id)

    def attach(self, folder_id: str, agent: str) -> bool:
        """Copy the folder's chunks into the agent's archival memory (False: attached already)."""
        if not self._engine.store.has_agent(agent):
            raise NotFoundError(f"agent {agent!r} not found")
        return folders.attach(self._engine, folder_id, agent)

    def detach(self, folder_id: str, agent: str) -> int:
        """Delete the agent's copies of the folder's chunks; returns how many."""
        return folders.detach(self._engine, folder_id, agent)

    def attached_to(self, agent: str) -> bool:
        """Whether any folder is attached to the agent."""
        return bool(self._engine.store.agent_folders(agent))

    def of_agent(self, agent: str) -> builtins.list[Folder]:
        """The folders attached to the agent, in the order attached."""
        return [self.get(folder_id) for folder_id in self._engine.store.agent_folders(agent)]
