"""The checking side of `benchmarks/chaos.py`: what the clients were told (the history of
acknowledgements) and the invariants checked on it against what the store holds afterwards."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks.load import all_pages

AGENTS = ("log-a", "log-b")
SHARED_LABEL = "team"  # a shared block every agent holds and every client edits


@dataclass
class History:
    """What the clients were told: acknowledgements by kind, every status, the 5xx answers."""

    messages: list[dict[str, Any]] = field(default_factory=list)  # recorded passages of acked messages
    # "client:n" -> agent, current (the highest acknowledged version), texts (every version's, sent or
    # acknowledged), lost (a write to it was never answered), gone (a forget of it was acknowledged);
    # any client patches or forgets any chain, so edits race forgets
    chains: dict[str, dict[str, Any]] = field(default_factory=dict)
    forgotten: list[tuple[int, str, str]] = field(default_factory=list)  # (id, agent, text) of acked forgets
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> folder, token, id, lost, deleted
    folders: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> scratch, deleted, lost
    shared_block: str = ""
    shared_edits: int = 0
    block_edits: list[tuple[str, str, str]] = field(default_factory=list)  # (agent, label, value)
    undos: Counter[tuple[str, str]] = field(default_factory=Counter)
    # undos sent and never answered (a killed server): each may have committed or not
    undos_unsure: Counter[tuple[str, str]] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def counts(history: History) -> dict[str, int]:
    return {
        "message records": len(history.messages),
        "passages": sum(1 for c in history.chains.values() if c["current"] and not c["lost"]),
        "forgets": len(history.forgotten),
        "block edits": len(history.block_edits),
        "undos": sum(history.undos.values()),
        "uploads": sum(1 for f in history.files.values() if f["id"]),
        "file deletes": sum(1 for f in history.files.values() if f["deleted"]),
        "folder deletes": sum(1 for f in history.folders.values() if f["deleted"]),
        "shared block edits": history.shared_edits,
    }


def check(url: str, history: History, clients: int) -> list[str]:
    """The invariants (see the module) on what the store holds now."""
    with httpx.Client(base_url=url, timeout=60) as api:
        return (
            [f"a 5xx answer: {error}" for error in history.server_errors[:20]]
            + _check_messages(api, history)
            + _check_passages(api, history)
            + check_blocks(api, history)
            + _check_files(api, history)
        )


def _check_messages(api: httpx.Client, history: History) -> list[str]:
    problems = []
    for agent in AGENTS:
        listed = all_pages(api, f"/v1/agents/{agent}/messages", {"order": "asc"})
        # one record each: the system message is none, and a stored tool call lists as its call and its return
        stored = [
            m for m in listed if m["message_type"] != "system_message" and m["message_type"] != "tool_call_message"
        ]
        ids = Counter(m["id"] for m in stored)
        turns = Counter(m["citation"]["turn_id"] for m in stored)
        problems += [f"{agent}: turn id {t} given {n} times" for t, n in turns.items() if n > 1]
        by_id = {m["id"]: m for m in stored}
        for acked in (m for m in history.messages if m["agent"] == agent):
            if ids[acked["id"]] != 1 or by_id[acked["id"]]["content"] != acked["sent"]:
                problems.append(
                    f"{agent}: acknowledged message {acked['id']} ({acked['sent']!r}) is stored "
                    f"{ids[acked['id']]} times"
                )
            if not acked["created"]:
                problems.append(f"{agent}: message {acked['id']} was acknowledged as not created")
        acked_ids = [m["id"] for m in history.messages if m["agent"] == agent]
        problems += [
            f"{agent}: record {i} acknowledged for two messages" for i, n in Counter(acked_ids).items() if n > 1
        ]
    return problems


def _check_passages(api: httpx.Client, history: History) -> list[str]:
    problems = []
    current = {agent: _current_ids(api, agent) for agent in AGENTS}
    listed = {
        agent: {p["text"]: int(p["id"]) for p in all_pages(api, f"/v1/agents/{agent}/archival-memory")}
        for agent in AGENTS
    }
    for chain in history.chains.values():
        if chain["gone"]:
            problems += _forgotten_chain(api, chain, listed[chain["agent"]])
            continue
        if chain["lost"] or chain["current"] is None:
            continue
        versions = api.get(f"/v1/agents/{chain['agent']}/archival-memory/{chain['current']}/history")
        if versions.status_code != 200:
            problems.append(f"acknowledged passage {chain['current']} is gone ({versions.status_code})")
            continue
        open_versions = [int(v["id"]) for v in versions.json() if v["valid_to"] is None]
        if open_versions != [chain["current"]] or chain["current"] not in current[chain["agent"]]:
            problems.append(
                f"passage {chain['current']}: current versions {open_versions}, listed: "
                f"{chain['current'] in current[chain['agent']]}"
            )
    return problems


def _forgotten_chain(api: httpx.Client, chain: dict[str, Any], listed: dict[str, int]) -> list[str]:
    """No version of a chain whose forget was acknowledged is listed or found, whoever edited it."""
    problems = [f"a version of a forgotten passage is listed: {t!r}" for t in sorted(chain["texts"]) if t in listed]
    for text in sorted(chain["texts"]):
        found = api.get(f"/v1/agents/{chain['agent']}/archival-memory/search", params={"query": text, "mode": "bm25"})
        hits = found.json().get("results", []) if found.status_code == 200 else []
        problems += [
            f"a version of a forgotten passage is found: {h['content']!r}"
            for h in hits
            if h["content"] in chain["texts"]
        ]
    return problems


def _check_files(api: httpx.Client, history: History) -> list[str]:
    """An acknowledged upload to a folder still there is listed once and found by its agents; a file
    whose delete, or whose folder's delete, was acknowledged is found by none."""
    problems = []
    listed = {
        folder: [f["file_name"] for f in api.get(f"/v1/folders/{folder}/files", params={"limit": 1000}).json()]
        for folder, state in history.folders.items()
        if not state["deleted"] and not state["lost"]
    }
    for name, entry in history.files.items():
        folder = history.folders[entry["folder"]]
        gone = entry["deleted"] or folder["deleted"]
        times = listed.get(entry["folder"], []).count(name)
        if entry["id"] and not gone and not entry["lost"] and entry["folder"] in listed and times != 1:
            problems.append(f"acknowledged upload {name} is listed {times} times")
        if gone:
            for agent in AGENTS:
                found = api.get(
                    f"/v1/agents/{agent}/archival-memory/search", params={"query": entry["token"], "mode": "bm25"}
                )
                hits = found.json().get("results", []) if found.status_code == 200 else []
                if any(entry["token"] in h["content"] for h in hits):
                    problems.append(f"{agent}: deleted file {name} is still found")
    return problems


def _current_ids(api: httpx.Client, agent: str) -> set[int]:
    return {int(p["id"]) for p in all_pages(api, f"/v1/agents/{agent}/archival-memory")}


def check_blocks(api: httpx.Client, history: History) -> list[str]:
    problems = []
    edits = Counter(history.block_edits)
    for agent, label in (
        {(a, lab) for a, lab, _ in history.block_edits} | set(history.undos) | set(history.undos_unsure)
    ):
        changes = api.get(f"/v1/agents/{agent}/core-memory/blocks/{label}/history").json()
        logged = Counter((agent, label, c["new"]["value"]) for c in changes if c["op"] != "undo" and c["new"])
        for edit, count in edits.items():
            if edit[:2] == (agent, label) and logged[edit] != count:
                problems.append(f"block edit {edit} acknowledged {count} times, in the history {logged[edit]}")
        undone = sum(1 for c in changes if c["op"] == "undo")
        acknowledged, unsure = history.undos[(agent, label)], history.undos_unsure[(agent, label)]
        if not acknowledged <= undone <= acknowledged + unsure:
            problems.append(
                f"{agent}/{label}: {acknowledged} undos acknowledged ({unsure} unanswered), {undone} logged"
            )
    return problems
