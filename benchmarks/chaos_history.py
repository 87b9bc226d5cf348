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


@dataclass
class History:
    """What the clients were told: acknowledgements by kind, every status, the 5xx answers."""

    messages: list[dict[str, Any]] = field(default_factory=list)  # recorded passages of acked messages
    chains: dict[str, dict[str, Any]] = field(default_factory=dict)  # "client:n" -> current id, forgotten, unsure
    forgotten: list[tuple[int, str, str]] = field(default_factory=list)  # (id, agent, text) of acked forgets
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
        "passages": sum(1 for c in history.chains.values() if not c["unsure"]),
        "forgets": len(history.forgotten),
        "block edits": len(history.block_edits),
        "undos": sum(history.undos.values()),
    }


def check(url: str, history: History, clients: int) -> list[str]:
    """The invariants (see the module) on what the store holds now."""
    with httpx.Client(base_url=url, timeout=60) as api:
        return (
            [f"a 5xx answer: {error}" for error in history.server_errors[:20]]
            + _check_messages(api, history)
            + _check_passages(api, history)
            + check_blocks(api, history)
        )


def _check_messages(api: httpx.Client, history: History) -> list[str]:
    problems = []
    for agent in AGENTS:
        stored = all_pages(api, f"/v1/agents/{agent}/messages", {"order": "asc"})
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
    for chain in history.chains.values():
        if chain["unsure"] or chain["current"] is None or chain.get("gone"):
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
    for record_id, agent, text in history.forgotten:
        if record_id in current[agent]:
            problems.append(f"forgotten passage {record_id} is listed again")
        found = api.get(f"/v1/agents/{agent}/archival-memory/search", params={"query": text, "mode": "bm25"})
        if found.status_code == 200 and any(int(h["id"]) == record_id for h in found.json().get("results", [])):
            problems.append(f"forgotten passage {record_id} is found by search")
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
