"""Sessions spread over the first hits (memvec.search.spread)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from memvec import Hit, Memory
from memvec.search.spread import SPREAD_HEAD, asks_for_a_sum, spread_sessions, spreads
from memvec.service.app import create_app
from tests.conftest import run_cli


def spread(scores: list[float], sessions: list[int], penalty: float, head: int = SPREAD_HEAD) -> list[int]:
    values = np.array(scores, dtype=np.float32)
    order = np.lexsort((np.arange(len(values)), -values))
    spread: list[int] = spread_sessions(order, values, np.array(sessions, dtype=np.int64), penalty, head).tolist()
    return spread


def test_a_second_session_comes_up_past_the_first_ones_further_turns() -> None:
    # session 0 holds the three best turns; session 1's best is 0.1 below them
    assert spread([0.9, 0.85, 0.8, 0.75], [0, 0, 0, 1], penalty=0.2) == [0, 3, 1, 2]


def test_a_gap_wider_than_the_penalty_keeps_the_order() -> None:
    assert spread([0.9, 0.85, 0.8, 0.3], [0, 0, 0, 1], penalty=0.2) == [0, 1, 2, 3]
    # each turn picked from a session lowers its next one further: the third turn yields to 0.5
    assert spread([0.9, 0.85, 0.8, 0.5], [0, 0, 0, 1], penalty=0.2) == [0, 1, 3, 2]


def test_records_without_a_session_are_never_held_back() -> None:
    assert spread([0.9, 0.85, 0.8, 0.75], [-1, -1, -1, 1], penalty=0.5) == [0, 1, 2, 3]


def test_past_the_head_the_hits_keep_their_order() -> None:
    scores = [0.9, 0.89, 0.88, 0.87, 0.86, 0.85, 0.84, 0.5]
    sessions = [0, 0, 0, 0, 0, 0, 0, 1]
    # the lone other session wins the second place; the rest of session 0 follows in order
    assert spread(scores, sessions, penalty=0.45, head=3) == [0, 7, 1, 2, 3, 4, 5, 6]
    assert spread(scores, sessions, penalty=0.45, head=1) == list(range(8))


@pytest.mark.parametrize(
    ("query", "sums"),
    [
        ("How many doctors did I visit?", True),
        ("how much have I made from selling eggs this month", True),
        ("What is the total cost of the vet visit and the flea medication?", True),
        ("How many  days a week do I go to the gym", True),  # any space between the words
        ("How MUCH did the flights cost", True),
        ("what did I spend in total on gifts", True),
        ("When did Caroline go to the support group?", False),
        ("Which trip did I take first, Lisbon or Porto?", False),
        ("what is my favourite totally tubular band", False),  # "total" only as a word of its own
        ("the totals of the quarter", False),
        ("how I met your mother", False),
        ("many thanks for the recipe", False),
    ],
)
def test_a_question_asking_for_a_count_or_a_total_is_a_sum(query: str, sums: bool) -> None:
    assert asks_for_a_sum(query) is sums
    assert spreads(None, query) is sums
    assert spreads(True, query) and not spreads(False, query)  # asked either way: as asked


def test_no_penalty_is_the_score_order() -> None:
    assert spread([0.5, 0.9, 0.7], [0, 0, 0], penalty=0.0) == [1, 2, 0]


@given(
    st.lists(st.tuples(st.floats(0, 1, width=32), st.integers(-1, 3)), min_size=1, max_size=30),
    st.floats(0, 1),
    st.integers(1, 8),
)
def test_spreading_reorders_and_never_drops_a_hit(rows: list[tuple[float, int]], penalty: float, head: int) -> None:
    scores, sessions = [r[0] for r in rows], [r[1] for r in rows]
    out = spread(scores, sessions, penalty, head)
    assert sorted(out) == list(range(len(rows)))
    assert out[0] == spread(scores, sessions, 0.0)[0]  # the best hit stays first
    assert out[head:] == [i for i in spread(scores, sessions, 0.0) if i not in out[:head]]


GARDEN = [
    ("s1", "the garden roses bloomed in the garden today"),
    ("s1", "garden roses need water every morning in the garden"),
    ("s1", "we cut garden roses for the table"),
    ("s2", "the roses at my aunt's garden were lovely too"),
    ("s3", "the tax forms are due on Friday"),
    ("s4", "my sister booked the flights to Lisbon"),
]


def garden(memory: Memory) -> None:
    recall = memory.recall("ana")
    for session, text in GARDEN:
        recall.append("user", text, session_id=session)


def sessions_of(hits: list[Hit]) -> list[str | None]:
    return [hit.citation.session_id for hit in hits]


def test_a_search_asked_to_spread_brings_a_second_session_up(memory: Memory) -> None:
    garden(memory)
    recall = memory.recall("ana")
    assert sessions_of(recall.search("garden roses", k=4, rerank=False)) == ["s1", "s1", "s1", "s2"]
    spread = recall.search("garden roses", k=4, rerank=False, spread_sessions=True)
    assert sessions_of(spread) == ["s1", "s2", "s1", "s1"]
    assert [h.score for h in spread] == sorted((h.score for h in spread), reverse=True)  # never rise


def test_a_question_asking_for_a_count_spreads_unless_told_not_to(memory: Memory) -> None:
    garden(memory)
    recall = memory.recall("ana")
    asked = "how many garden roses"
    assert sessions_of(recall.search(asked, k=4, rerank=False)) == ["s1", "s2", "s1", "s1"]
    assert sessions_of(recall.search(asked, k=4, rerank=False, spread_sessions=False)) == ["s1", "s1", "s1", "s2"]
    archival = memory.archival("ana")
    for session, text in GARDEN:
        archival.insert(text, session_id=session)
    assert sessions_of(archival.search(asked, k=4, rerank=False))[:2] == ["s1", "s2"]
    assert sessions_of(archival.search(asked, k=4, rerank=False, spread_sessions=False))[:2] == ["s1", "s1"]


def test_over_http_a_search_spreads_sessions(memory: Memory) -> None:
    garden(memory)
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        for spread, expected in (("false", ["s1", "s1"]), ("true", ["s1", "s2"])):
            params: dict[str, str | int] = {
                "query": "garden roses",
                "top_k": 4,
                "rerank": "false",
                "spread_sessions": spread,
            }
            found = api.get("/v1/agents/ana/recall-memory/search", params=params).json()
            assert [r["citation"]["session_id"] for r in found["results"]][:2] == expected
        asked: dict[str, str | int] = {"query": "how many garden roses", "top_k": 4, "rerank": "false"}
        extras: list[dict[str, str | int]] = [{"spread_sessions": "false"}, {}]  # left out: a count spreads
        for extra, expected in zip(extras, (["s1", "s1"], ["s1", "s2"]), strict=True):
            found = api.get("/v1/agents/ana/recall-memory/search", params=asked | extra).json()
            assert [r["citation"]["session_id"] for r in found["results"]][:2] == expected


def test_the_command_line_spreads_sessions(tmp_path: Path) -> None:
    home, lines = tmp_path / "home", tmp_path / "turns.jsonl"
    lines.write_text("".join(json.dumps({"text": t, "role": "user", "session_id": s}) + "\n" for s, t in GARDEN))
    run_cli("--model", "hash:64", "ingest", str(lines), "--agent", "ana", "--tier", "recall", home=home)
    search = ["--model", "hash:64", "search", "garden roses", "--agent", "ana", "--tier", "recall", "--no-rerank"]
    found = run_cli(*search, "-k", "4", "--spread-sessions", "--json", home=home)
    assert [hit["citation"]["session_id"] for hit in json.loads(found.stdout)][:2] == ["s1", "s2"]
    search[3] = "how many garden roses"
    for flags, expected in (([], ["s1", "s2"]), (["--no-spread-sessions"], ["s1", "s1"])):
        found = run_cli(*search, "-k", "4", *flags, "--json", home=home)
        assert [hit["citation"]["session_id"] for hit in json.loads(found.stdout)][:2] == expected
