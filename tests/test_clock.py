"""The store's clock (`Memory.open(clock=...)`) is what "now" is for a record's time, which versions
are valid, what has expired and what "yesterday" means in a query: a test moves it instead of
sleeping, and every read follows it with no write in between."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvec import Memory
from memvec.embed import HashingEmbedder
from tests.conftest import SteppingClock

START = datetime(2031, 3, 4, 12, 0, tzinfo=UTC)  # not today: only the clock can make it "now"


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock(START)


@pytest.fixture
def timed(home: Path, clock: SteppingClock) -> Iterator[Memory]:
    with Memory.open(home, embedder=HashingEmbedder(64), clock=clock) as mem:
        yield mem


def test_a_record_is_timed_by_the_clock(timed: Memory) -> None:
    record = timed.archival("ana").insert("The shop opens at nine.").record
    message = timed.recall("ana").append("user", "see you at nine").record
    assert record.created_at == message.created_at == START


def test_a_version_leaves_search_and_listing_when_the_clock_passes_its_valid_to(
    timed: Memory, clock: SteppingClock
) -> None:
    archival = timed.archival("ana")
    archival.insert("The offer holds until tonight.", valid_to=START + timedelta(hours=6), tags=["shop"])
    archival.insert("The shop opens at nine.", tags=["shop"])
    assert [h.text for h in archival.search("offer tonight", mode="bm25")] == ["The offer holds until tonight."]
    clock.advance(timedelta(hours=7))  # nothing written meanwhile: the search's cached versions must follow
    assert archival.search("offer tonight", mode="bm25") == []
    assert archival.search("offer tonight", mode="bm25", tags=["shop"]) == []  # a filtered search reads the store
    assert all("offer" not in h.text for h in archival.search("offer tonight"))
    assert [r.text for r in archival.list()] == ["The shop opens at nine."]
    as_of = START + timedelta(hours=1)
    assert [h.text for h in archival.search("offer tonight", mode="bm25", as_of=as_of)] == [
        "The offer holds until tonight."
    ]


def test_a_record_expires_when_the_clock_passes_its_expires_at(timed: Memory, clock: SteppingClock) -> None:
    archival = timed.archival("ana")
    archival.insert("the door code is 1234 until friday", expires_at=START + timedelta(days=2))
    assert archival.count() == 1 and archival.search("door code", mode="bm25")
    clock.advance(timedelta(days=3))
    assert archival.search("door code", mode="bm25") == [] and archival.count() == 0


def test_yesterday_in_a_query_is_the_clocks_yesterday(timed: Memory, clock: SteppingClock) -> None:
    recall = timed.recall("ana")
    recall.append("user", "I planted tomatoes in the garden")
    clock.advance(timedelta(days=1))
    recall.append("user", "I planted basil in the garden")
    hits = recall.search("what did I plant yesterday?", dates_in_query=True)
    assert [h.text for h in hits] == ["I planted tomatoes in the garden"]
