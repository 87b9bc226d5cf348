"""A record longer than the model's window is embedded past the window's end (memvec.embed.base)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from memvec import Memory, NewRecord, SearchMode, SearchRequest
from memvec.embed import Embedder, HashingEmbedder
from memvec.embed.base import TAIL_WEIGHT, Spans, Vectors, embed_records, long_text_windows


class WordTokens(HashingEmbedder):
    """The hashing embedder with words for tokens and a window of `window` of them, which it reads
    only the first of, as a model does."""

    def __init__(self, window: int) -> None:
        super().__init__(64)
        self.max_tokens = window

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return super().embed_documents([" ".join(text.split()[: self.max_tokens]) for text in texts])

    def token_spans(self, texts: Sequence[str]) -> Spans:
        out = []
        for text in texts:
            spans, start = [], 0
            for word in text.split():
                start = text.index(word, start)
                spans.append((start, start + len(word)))
                start += len(word)
            out.append(spans)
        return out


def words(count: int, first: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(first, first + count))


def test_a_text_within_the_window_is_one_piece() -> None:
    pieces, owners, weights = long_text_windows(WordTokens(8), [words(8), "short one"])
    assert (pieces, owners, weights) == ([words(8), "short one"], None, None)


def test_past_the_first_window_a_text_is_cut_into_equal_windows() -> None:
    text = words(20)
    pieces, owners, weights = long_text_windows(WordTokens(8), ["tiny", text, "end"])
    # the text itself (the model reads its first 8 tokens), then the other 12 in two windows of 6,
    # not one of 8 and a tail of 4; each weighs TAIL_WEIGHT per window's worth of tokens
    assert pieces == ["tiny", text, words(6, 8), words(6, 14), "end"]
    assert owners is not None and owners.tolist() == [0, 1, 1, 1, 2]
    assert weights is not None and weights.tolist() == [1, 1, TAIL_WEIGHT * 6 / 8, TAIL_WEIGHT * 6 / 8, 1]


def test_a_long_texts_vector_adds_the_rest_to_its_first_window() -> None:
    embedder = WordTokens(8)
    text = words(20)
    vectors = embed_records(embedder, ["tiny", text], [None, None])
    first, *rest = embedder.embed_documents([text, words(6, 8), words(6, 14)])
    expected = first + TAIL_WEIGHT * 6 / 8 * (rest[0] + rest[1])
    np.testing.assert_allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.array_equal(vectors[0], embedder.embed_documents(["tiny"])[0])  # one piece: exactly as given
    cut = embed_records(embedder, ["tiny", text], [None, None], windows=False)
    np.testing.assert_array_equal(cut[1], first)


def test_the_first_window_leads_a_rest_twice_as_long() -> None:
    """What a record opens with says most of what it is about (SciFact ranked better so)."""
    embedder = WordTokens(8)
    opening, rest = words(8, 100), words(16, 200)
    vector = embed_records(embedder, [f"{opening} {rest}"], [None])[0]
    alone = embedder.embed_documents([opening, rest])
    assert vector @ alone[0] > vector @ alone[1]


def test_an_embedder_without_a_tokenizer_reads_each_text_whole() -> None:
    assert long_text_windows(HashingEmbedder(64), [words(500)])[1] is None


PREAMBLE = "Minutes of the committee. " + "The committee discussed the harbour budget at length and took notes. " * 25
TAILS = [
    "the penguins at the zoo were moved to a colder enclosure",
    "a violin was stolen from the rehearsal room",
    "the bakery on Elm Street started selling sourdough",
    "the lighthouse keeper retired after forty years",
    "a comet will be visible next Thursday night",
    "the marathon route now crosses the old stone bridge",
]


@pytest.fixture
def long_records(home: Path, minilm_int8: Embedder, request: pytest.FixtureRequest) -> Iterator[Memory]:
    mem = Memory.open(home, embedder=minilm_int8, index={"long_text_windows": request.param})
    mem.insert([NewRecord(agent="a", tier="archival", text=f"{PREAMBLE}Last, {tail}.") for tail in TAILS])
    yield mem
    mem.close()


def tail_ranks(mem: Memory) -> list[int]:
    """Where the record that ends with each fact ranks for that fact (vector alone). The records
    differ only past the model's window, after the same long preamble."""
    ranks = []
    for tail in TAILS:
        hits = mem.search(SearchRequest(agent="a", tier="archival", query=tail, k=len(TAILS), mode=SearchMode.VECTOR))
        ranks.append([tail in h.text for h in hits].index(True) + 1)
    return ranks


@pytest.mark.parametrize("long_records", [True], indirect=True)
def test_a_fact_past_the_window_finds_its_record(long_records: Memory) -> None:
    assert tail_ranks(long_records) == [1] * len(TAILS)


@pytest.mark.parametrize("long_records", [False], indirect=True)
def test_cut_at_the_window_the_fact_is_invisible(long_records: Memory) -> None:
    """What windows mend: read only up to the window, every record reads the same (ties, by id)."""
    assert tail_ranks(long_records) == list(range(1, len(TAILS) + 1))
