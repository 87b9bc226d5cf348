"""The files an agent sees of its folders (Letta's file blocks): every current file of every folder
attached to it, open or closed, and of an open file the lines it looks at, shown in its prompt.

A file is open at its start once uploaded or attached (the store keeps a row only for a file the
agent opened, closed or narrowed since). At most `max_open` files are open: the most recently
opened ones; opening one more closes the least recently opened (and says which).
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime

from memvec.documents.lines import cut_to, file_lines, line_window
from memvec.engine.engine import Engine
from memvec.engine.folders import folder_of, folder_owner
from memvec.errors import InvalidInputError, NotFoundError
from memvec.types import Document, Folder
from memvec.types.files import FileView, FileViewState


class _Windows:
    """The last views made, by what they are made of (the file's content hash and name, the lines and
    the limit): an agent's prompt is built at every model call, and a large file's lines need not be
    cut again each time. Content-addressed, so no change of any store can make an entry stale."""

    def __init__(self, chars: int) -> None:
        self._chars, self._held, self._lock = chars, 0, threading.Lock()
        self._views: OrderedDict[tuple[str, str, int | None, int | None, int], str] = OrderedDict()

    def get(self, key: tuple[str, str, int | None, int | None, int], make: Callable[[], str]) -> str:
        with self._lock:
            if key in self._views:
                self._views.move_to_end(key)
                return self._views[key]
        value = make()
        with self._lock:
            if key not in self._views:
                self._views[key] = value
                self._held += len(value)
            while self._held > self._chars:
                self._held -= len(self._views.popitem(last=False)[1])
        return value


_WINDOWS = _Windows(chars=8_000_000)  # at most ~32 MB of text held


class AgentFiles:
    def __init__(self, engine: Engine, agent: str, *, max_open: int, char_limit: int) -> None:
        self._engine, self.agent = engine, agent
        self.max_open, self.char_limit = max_open, char_limit

    def folders(self) -> builtins.list[Folder]:
        return [folder_of(self._engine, folder_id) for folder_id in self._engine.store.agent_folders(self.agent)]

    def _entries(self, folders: builtins.list[Folder]) -> builtins.list[tuple[Folder, Document, FileViewState]]:
        store, rows = self._engine.store, self._engine.store.file_views(self.agent)
        return [
            (folder, doc, rows.get(doc.id) or FileViewState(is_open=True, accessed_at=doc.created_at))
            for folder in folders
            for doc in store.documents(folder_owner(folder.id))
        ]

    def list(self, folders: builtins.list[Folder] | None = None) -> builtins.list[FileView]:
        """Every file of the attached folders, in the order attached and uploaded (`folders`: those
        folders, when the caller has read them already)."""
        entries = self._entries(self.folders() if folders is None else folders)
        opened = sorted((e for e in entries if e[2].is_open), key=lambda e: e[2].accessed_at, reverse=True)
        shown = {doc.id for _, doc, _ in opened[: self.max_open]}
        return [self._view(folder, doc, state, doc.id in shown) for folder, doc, state in entries]

    def _view(self, folder: Folder, doc: Document, state: FileViewState, is_open: bool) -> FileView:
        value = ""
        if is_open:
            key = (doc.content_hash, doc.name, state.start_line, state.end_line, self.char_limit)
            value = _WINDOWS.get(key, lambda: self._window(doc, state))
        return FileView(
            document_id=doc.id,
            folder_id=folder.id,
            folder_name=folder.name,
            file_name=doc.name,
            label=f"{folder.name}/{doc.name}",
            is_open=is_open,
            value=value,
            limit=self.char_limit,
            start_line=state.start_line if is_open else None,
            end_line=state.end_line if is_open else None,
            accessed_at=state.accessed_at,
        )

    def _window(self, doc: Document, state: FileViewState) -> str:
        lines = file_lines(doc.name, self.text(doc.id))
        return cut_to(line_window(doc.name, lines, state.start_line, state.end_line), self.char_limit)

    def text(self, document_id: int) -> str:
        return self._engine.store.document_text(document_id) or ""

    def get(self, document_id: int) -> FileView:
        for view in self.list():
            if view.document_id == document_id:
                return view
        raise NotFoundError(f"file-{document_id} is in none of the folders attached to {self.agent!r}")

    def named(self, label: str) -> FileView:
        """The file the agent calls `label` (`<folder>/<file>`; a file name alone where it is unique)."""
        views = self.list()
        found = [v for v in views if v.label == label] or [v for v in views if v.file_name == label]
        if len(found) != 1:
            known = ", ".join(repr(v.label) for v in views) or "none"
            raise InvalidInputError(f"no file named {label!r} is attached (the files attached: {known})")
        return found[0]

    def open(self, document_id: int, *, offset: int | None = None, length: int | None = None) -> builtins.list[str]:
        """Open a file at lines `offset` (0-based) to `offset + length` (the whole file without
        either); returns the labels of the files closed to stay within `max_open`."""
        views = self.list()
        target = next((v for v in views if v.document_id == document_id), None)
        if target is None:
            raise NotFoundError(f"file-{document_id} is in none of the folders attached to {self.agent!r}")
        start, end = _range(offset, length)
        try:
            line_window(target.label, file_lines(target.file_name, self.text(document_id)), start, end)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None
        now = self._engine.store.clock()
        others = sorted((v for v in views if v.is_open and v.document_id != document_id), key=_recency, reverse=True)
        closing = others[self.max_open - 1 :]
        writes = {v.document_id: _closed(v, now) for v in closing}
        writes[document_id] = FileViewState(is_open=True, start_line=start, end_line=end, accessed_at=now)
        self._engine.store.put_file_views(self.agent, writes)
        return [v.label for v in closing]

    def close(self, document_id: int) -> None:
        view = self.get(document_id)
        self._engine.store.put_file_views(self.agent, {document_id: _closed(view, self._engine.store.clock())})

    def close_all(self, *, keep: frozenset[int] = frozenset()) -> builtins.list[str]:
        """Close every open file but those in `keep`; returns their labels."""
        now = self._engine.store.clock()
        open_views = [v for v in self.list() if v.is_open and v.document_id not in keep]
        self._engine.store.put_file_views(self.agent, {v.document_id: _closed(v, now) for v in open_views})
        return [v.label for v in open_views]


def _range(offset: int | None, length: int | None) -> tuple[int | None, int | None]:
    if offset is not None and offset < 0:
        raise InvalidInputError(f"offset is a 0-based line number, at least 0 (not {offset})")
    if length is not None and length < 1:
        raise InvalidInputError(f"length is a number of lines, at least 1 (not {length})")
    if offset is None and length is None:
        return None, None
    start = offset or 0
    return start, None if length is None else start + length


def _recency(view: FileView) -> datetime:
    return view.accessed_at


def _closed(view: FileView, now: datetime) -> FileViewState:
    return FileViewState(is_open=False, accessed_at=now)
