"""The history checker's writes to the newer surfaces (#59): files uploaded to and deleted from folders,
scratch folders deleted while other clients upload into them, and a shared block every client edits
and undoes. Each write is logged as it is sent (a lost answer may still have committed) and as it is
acknowledged; the checks are in benchmarks/chaos_history.py."""

from __future__ import annotations

import random
import threading
from typing import Any

import httpx

from benchmarks.chaos_history import AGENTS, SHARED_LABEL, History

DOCUMENT_OPS = ("upload", "upload", "delete_file", "folder", "shared", "shared_undo")


def prepare(api: httpx.Client, history: History) -> None:
    """The folder every run uploads to (attached to every agent) and the block they share."""
    folder = api.post("/v1/folders", json={"name": "chaos-docs"}).raise_for_status().json()["id"]
    history.folders[folder] = {"scratch": False, "deleted": False, "lost": False}
    block = api.post("/v1/blocks", json={"label": SHARED_LABEL, "value": "", "limit": 5000})
    history.shared_block = block.raise_for_status().json()["id"]
    for agent in AGENTS:
        api.patch(f"/v1/agents/{agent}/folders/attach/{folder}").raise_for_status()
        api.patch(f"/v1/agents/{agent}/core-memory/blocks/attach/{history.shared_block}").raise_for_status()


class DocumentOps:
    """A mixin of the chaos client (its rng, history, number and answer bookkeeping)."""

    n: int
    rng: random.Random
    history: History
    my_files: list[str]

    def _answer(self, response: httpx.Response, op: str) -> bool:
        raise NotImplementedError

    def _sent(self, entry: dict[str, Any], lock: threading.Lock, send: Any) -> httpx.Response:
        """`send()`, marking `entry` lost when no answer came (it may have committed or not)."""
        try:
            return send()  # type: ignore[no-any-return]
        except httpx.TransportError:
            with lock:
                entry["lost"] = True
            raise

    def _live_folders(self) -> list[str]:
        with self.history.lock:
            return [f for f, state in self.history.folders.items() if not state["deleted"]]

    def _upload(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        folder = self.rng.choice(self._live_folders())
        name, token = f"c{self.n}-s{step}.md", f"filetoken{self.n}q{step}"
        entry = {"folder": folder, "token": token, "id": None, "lost": False, "deleted": False}
        with self.history.lock:
            self.history.files[name] = entry
        data = f"# Note {step}\n\nThe {token} note of client {self.n}.\n".encode()
        response = self._sent(
            entry,
            self.history.lock,
            lambda: http.post(
                f"{url}/v1/folders/{folder}/upload",
                params={"duplicate_handling": "error"},
                files={"file": (name, data, "text/markdown")},
            ),
        )
        if self._answer(response, "upload"):
            with self.history.lock:
                entry["id"] = response.json()["id"]
            self.my_files.append(name)

    def _delete_file(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        with self.history.lock:
            live = [n for n in self.my_files if not self.history.files[n]["deleted"]]
        if not live:
            return
        entry = self.history.files[self.rng.choice(live)]
        response = self._sent(
            entry, self.history.lock, lambda: http.delete(f"{url}/v1/folders/{entry['folder']}/{entry['id']}")
        )
        if self._answer(response, "delete_file"):
            with self.history.lock:
                entry["deleted"] = True

    def _folder(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        """Make a scratch folder (attached to one agent), or delete one other clients may be uploading to."""
        with self.history.lock:
            scratch = [f for f, s in self.history.folders.items() if s["scratch"] and not s["deleted"]]
        if scratch and self.rng.random() < 0.5:
            folder = self.rng.choice(scratch)
            state = self.history.folders[folder]
            response = self._sent(state, self.history.lock, lambda: http.delete(f"{url}/v1/folders/{folder}"))
            if self._answer(response, "folder"):
                with self.history.lock:
                    state["deleted"] = True
            return
        made = http.post(f"{url}/v1/folders", json={"name": f"scratch c{self.n} s{step}"})
        if self._answer(made, "folder"):
            folder = made.json()["id"]
            with self.history.lock:
                self.history.folders[folder] = {"scratch": True, "deleted": False, "lost": False}
            self._answer(http.patch(f"{url}/v1/agents/{agent}/folders/attach/{folder}"), "folder")

    def _shared(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        value = f"shared notes of c{self.n} at s{step}"
        response = http.patch(f"{url}/v1/blocks/{self.history.shared_block}", json={"value": value})
        if self._answer(response, "shared"):
            with self.history.lock:
                self.history.block_edits.append((AGENTS[0], SHARED_LABEL, value))
                self.history.shared_edits += 1

    def _shared_undo(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        """Undo the shared block's latest change through one holder (409 when it changed meanwhile,
        or when that would undo its creation: never acknowledged then)."""
        key = (AGENTS[0], SHARED_LABEL)
        with self.history.lock:
            self.history.undos_unsure[key] += 1
        response = http.post(f"{url}/v1/agents/{AGENTS[0]}/core-memory/blocks/{SHARED_LABEL}/undo")
        answered = self._answer(response, "shared_undo")
        with self.history.lock:
            self.history.undos_unsure[key] -= 1
            self.history.undos[key] += answered
