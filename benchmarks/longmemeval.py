"""LongMemEval_S (Wu et al., ICLR 2025): long chats, one haystack of ~490 turns per question.

Each question is its own task: its haystack's turns go into an agent's recall tier the way a chat
app would store them (one record a turn, "role: content", the session id, the turn's place and the
session's date), and the question is searched there. A turn marked `has_answer` is evidence; the
sessions in `answer_session_ids` hold it. Abstention questions (`_abs`) have no evidence and are
skipped, as the paper does. memvec takes records of up to MAX_TEXT_CHARS characters: a longer turn
(a pasted document) is cut there, as an app storing it would have to, and counted.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from statistics import mean
from typing import Any

from benchmarks.datasets import Doc, Query, Task
from benchmarks.metrics import all_evidence_at_k, hit_at_k, ndcg_at_k
from memvec.types import MAX_TEXT_CHARS

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "longmemeval-s-dev.jsonl"
HELP = (
    "LongMemEval_S data not found at {path}. Pass --longmemeval PATH (a JSONL file of LongMemEval_S "
    "questions), or get longmemeval_s_cleaned.json from the public repository xiaowu0162/LongMemEval (MIT)."
)
# The deterministic subset `make bench` runs: the first questions of each type in file order
# (every type appears; the full run takes all of them). A turn is ~1,000 characters, so a haystack
# of ~490 turns costs about a minute of embedding on 2 cores.
PER_TYPE_DEFAULT = 2
# A smoke run's haystack: the evidence sessions and the first few others of one question.
SMOKE_SESSIONS = 6


def parse_date(text: str) -> datetime | None:
    """'2023/05/20 (Sat) 02:02' -> aware datetime (UTC; the data gives no zone)."""
    try:
        return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)
    except ValueError:
        return None


def load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise FileNotFoundError(HELP.format(path=path))
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def subset(questions: list[dict[str, Any]], per_type: int | None) -> list[dict[str, Any]]:
    """The answerable questions; with `per_type`, only the first that many of each question type."""
    kept: list[dict[str, Any]] = []
    seen: defaultdict[str, int] = defaultdict(int)
    for question in questions:
        if question["question_id"].endswith("_abs"):
            continue
        seen[question["question_type"]] += 1
        if per_type is None or seen[question["question_type"]] <= per_type:
            kept.append(question)
    return kept


def smaller(question: dict[str, Any]) -> dict[str, Any]:
    """The question with only its evidence sessions and the first SMOKE_SESSIONS others."""
    keep = [
        i
        for i, sid in enumerate(question["haystack_session_ids"])
        if sid in question["answer_session_ids"] or i < SMOKE_SESSIONS
    ]
    return {
        **question,
        **{
            field: [question[field][i] for i in keep]
            for field in ("haystack_session_ids", "haystack_dates", "haystack_sessions")
        },
    }


def turn_key(session_id: str, position: int, turn: int) -> str:
    """A turn's citation key; the session's place in the haystack keeps repeated session ids apart."""
    return f"{session_id}@{position}/{turn}"


def session_of(key: str) -> str:
    return key.rpartition("/")[0].rpartition("@")[0]


def task(question: dict[str, Any]) -> Task:
    docs, evidence, cut = [], set(), 0
    sessions = zip(
        question["haystack_session_ids"], question["haystack_dates"], question["haystack_sessions"], strict=True
    )
    for position, (session_id, date, turns) in enumerate(sessions):
        when = parse_date(date)
        for number, turn in enumerate(turns):
            key, text = turn_key(session_id, position, number), f"{turn['role']}: {turn['content']}"
            cut += len(text) > MAX_TEXT_CHARS
            docs.append(Doc(key, text[:MAX_TEXT_CHARS], f"{session_id}@{position}", when, turn["role"]))
            if turn.get("has_answer"):
                evidence.add(key)
    query = Query(
        question["question_id"],
        question["question"],
        evidence,
        question["question_type"],
        sessions=set(question["answer_session_ids"]),
        asked_at=parse_date(question["question_date"]),
    )
    return Task(f"longmemeval/{question['question_id']}", "recall", docs, [query], meta={"cut": str(cut)})


def _sessions_at_k(ranked: Sequence[str], sessions: set[str], k: int) -> tuple[float, float]:
    """(a top-k turn comes from an evidence session, every evidence session has a top-k turn)."""
    found = {session_of(key) for key in ranked[:k]}
    return float(bool(found & sessions)), float(sessions <= found)


def summarize(rows: Sequence[tuple[Sequence[str], Query]]) -> dict[str, float]:
    """Turn R@1/5/10, NDCG@10 and all-evidence R@10; session R@5/10, any and all."""
    if not rows:
        return {"n": 0}
    out = {f"recall@{k}": mean(hit_at_k(r, q.evidence, k) for r, q in rows) for k in (1, 5, 10)}
    out["ndcg@10"] = mean(ndcg_at_k(r, q.evidence, 10) for r, q in rows)
    out["all@10"] = mean(all_evidence_at_k(r, q.evidence, 10) for r, q in rows)
    for k in (5, 10):
        pairs = [_sessions_at_k(r, q.sessions, k) for r, q in rows]
        out[f"session_any@{k}"] = mean(p[0] for p in pairs)
        out[f"session_all@{k}"] = mean(p[1] for p in pairs)
    out["n"] = len(rows)
    return out
