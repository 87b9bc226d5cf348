"""Time expressions in questions (#35 item 6): a table of questions, each resolved against one
reference time (Wednesday 2024-05-15 14:00 UTC) into the period it names, or into none."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memvec import Memory
from memvec.search.when import period_in
from memvec.service.app import create_app
from tests.conftest import run_cli

REFERENCE = datetime(2024, 5, 15, 14, 0, tzinfo=UTC)  # a Wednesday

# question -> (first day, day after the last) of the period, or None
TABLE: list[tuple[str, tuple[str, str] | None]] = [
    ("What did I eat yesterday?", ("2024-05-14", "2024-05-15")),
    ("what did we talk about today", ("2024-05-15", "2024-05-16")),
    ("Where was I this morning?", ("2024-05-15", "2024-05-16")),
    ("What did I buy two weeks ago?", ("2024-04-29", "2024-05-06")),
    ("what happened 3 days ago", ("2024-05-12", "2024-05-13")),
    ("a couple of months ago I moved", ("2024-03-01", "2024-04-01")),
    ("Which book did I finish a year ago?", ("2023-01-01", "2024-01-01")),
    ("What did I do last week?", ("2024-05-06", "2024-05-13")),
    ("plans for this week", ("2024-05-13", "2024-05-20")),
    ("What was my budget last month?", ("2024-04-01", "2024-05-01")),
    ("goals for this year", ("2024-01-01", "2025-01-01")),
    ("where did I go last weekend", ("2024-05-11", "2024-05-13")),
    ("anything planned this weekend?", ("2024-05-18", "2024-05-20")),
    ("What did I cook last Tuesday?", ("2024-05-14", "2024-05-15")),
    ("What did I cook last Wednesday?", ("2024-05-08", "2024-05-09")),  # not today: a week back
    ("Where did we travel last summer?", ("2023-06-01", "2023-09-01")),
    ("what did I plant this spring", ("2024-03-01", "2024-06-01")),
    ("what did I plant last spring", ("2023-03-01", "2023-06-01")),  # this one is not over yet
    ("the trip last winter", ("2023-12-01", "2024-03-01")),
    ("in the fall", None),  # "the fall": no "in fall" expression, and "fall" is also a verb
    ("during autumn", ("2023-09-01", "2023-12-01")),
    ("What happened in March?", ("2024-03-01", "2024-04-01")),
    ("in December", ("2023-12-01", "2024-01-01")),  # the latest December begun
    ("last May", ("2023-05-01", "2023-06-01")),  # this May is not over: the one before
    ("in May", ("2024-05-01", "2024-06-01")),
    ("in May 2022", ("2022-05-01", "2022-06-01")),
    ("Sept 2021 trip", ("2021-09-01", "2021-10-01")),
    ("since March", ("2024-03-01", "2024-05-16")),
    ("What did I read in 2019?", ("2019-01-01", "2020-01-01")),
    ("since 2022", ("2022-01-01", "2024-05-16")),
    ("on 2023-08-07 we met", ("2023-08-07", "2023-08-08")),
    ("On May 7, 2023 I started", ("2023-05-07", "2023-05-08")),
    ("the 7th of May 2023", ("2023-05-07", "2023-05-08")),
    ("on February 30, 2023", None),  # no such day
    ("May I ask what my dog's name is?", None),  # the verb, not the month
    ("What is my favourite colour?", None),
    ("I have 2019 stamps", None),  # a number, not a year
    ("yesterday, or two weeks ago?", ("2024-05-14", "2024-05-15")),  # the first expression wins
]


@pytest.mark.parametrize(("question", "expected"), TABLE, ids=[q for q, _ in TABLE])
def test_each_expression_names_its_period(question: str, expected: tuple[str, str] | None) -> None:
    period = period_in(question, REFERENCE)
    if expected is None:
        assert period is None, period
        return
    assert period is not None
    assert (period.start.date().isoformat(), period.end.date().isoformat()) == expected
    assert period.start.tzinfo is not None and period.expression.lower() in question.lower()


def test_a_search_keeps_the_period_its_query_names_when_asked(memory: Memory) -> None:
    recall = memory.recall("ana")
    for day, text in (
        (14, "I had green tea with lunch"),
        (10, "I had black tea at the station"),
        (1, "I had mint tea at home"),
    ):
        recall.append("user", text, created_at=datetime(2024, 5, day, 12, tzinfo=UTC))
    asked = "what tea did I have yesterday?"
    everything = [h.text for h in recall.search(asked, k=5)]
    assert len(everything) == 3
    dated = recall.search(asked, k=5, dates_in_query=True, reference_time=REFERENCE)
    assert [h.text for h in dated] == ["I had green tea with lunch"]
    last_week = recall.search("tea last week", k=5, dates_in_query=True, reference_time=REFERENCE)
    assert [h.text for h in last_week] == ["I had black tea at the station"]
    outside = recall.search(
        asked,
        k=5,
        dates_in_query=True,
        reference_time=REFERENCE,
        start=datetime(2024, 5, 1, tzinfo=UTC),
        end=datetime(2024, 5, 2, tzinfo=UTC),
    )
    assert outside == []  # yesterday is outside the range given: nothing can match
    undated = recall.search("which tea did I have?", k=5, dates_in_query=True, reference_time=REFERENCE)
    assert len(undated) == 3  # a query naming no period is not filtered


def test_over_http_both_searches_take_dates_in_query(memory: Memory) -> None:
    memory.archival("ana").insert("Booked the dentist", created_at=datetime(2024, 5, 14, 9, tzinfo=UTC))
    memory.archival("ana").insert("Booked the plumber", created_at=datetime(2024, 4, 2, 9, tzinfo=UTC))
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        params = {
            "query": "what did I book last month",
            "dates_in_query": "true",
            "reference_time": REFERENCE.isoformat(),
        }
        found = api.get("/v1/agents/ana/archival-memory/search", params=params).json()
        assert [r["content"] for r in found["results"]] == ["Booked the plumber"]
        recall = api.get("/v1/agents/ana/recall-memory/search", params=params)
        assert recall.status_code == 200


def test_the_command_line_takes_dates_in_query(tmp_path: Path) -> None:
    home, lines = tmp_path / "home", tmp_path / "turns.jsonl"
    turns = [
        ("2024-05-14T09:00:00Z", "walked the dog in the park"),
        ("2024-03-02T09:00:00Z", "walked the dog on the beach"),
    ]
    lines.write_text("".join(json.dumps({"text": t, "role": "user", "created_at": w}) + "\n" for w, t in turns))
    run_cli("--model", "hash:64", "ingest", str(lines), "--agent", "ana", "--tier", "recall", home=home)
    found = run_cli(
        "--model",
        "hash:64",
        "search",
        "where did I walk the dog yesterday",
        "--agent",
        "ana",
        "--tier",
        "recall",
        "--dates-in-query",
        "--reference-time",
        "2024-05-15T14:00:00Z",
        "--json",
        home=home,
    )
    assert [hit["text"] for hit in json.loads(found.stdout)] == ["walked the dog in the park"]
