"""BM25 against the reference implementation rank_bm25, on real English text."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from memvec.errors import OldIndexFormatError
from memvec.index.lexical import BM25Index
from memvec.index.tokenize import plain_tokens, tokenize
from tests.conftest import LOCOMO, require_data


def stdlib_docstrings(limit: int = 1500) -> list[str]:
    """A real corpus that is always present: docstrings of the standard library."""
    import argparse
    import collections
    import email.message
    import json as json_module
    import logging
    import pathlib
    import sqlite3
    import string
    import textwrap
    import unittest

    docs: list[str] = []
    modules = (
        argparse,
        collections,
        email.message,
        json_module,
        pathlib,
        sqlite3,
        string,
        textwrap,
        inspect,
        unittest.case,
        logging,
    )
    for module in modules:
        for _, obj in inspect.getmembers(module):
            doc = inspect.getdoc(obj)
            if doc and len(tokenize(doc)) >= 3 and doc not in docs:
                docs.append(doc)
    return docs[:limit]


def locomo_turns(limit: int = 1500) -> list[str]:
    if not LOCOMO.exists():
        return []
    turns = []
    for sample in json.loads(Path(LOCOMO).read_text()):
        conversation = sample["conversation"]
        for key, session in conversation.items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [f"{t['speaker']}: {t['text']}" for t in session if tokenize(t["text"])]
    return turns[:limit]


QUERIES = [
    "how to read a file path",
    "json decode error",
    "default dictionary of lists",
    "escape special characters in a string",
    "the database connection cursor",
    "what did she paint last weekend",
    "adoption agency interview",
    "running a marathon",
]


class LuceneIdfBM25(BM25Okapi):  # type: ignore[misc]  # rank_bm25 ships no types
    """rank_bm25's Okapi BM25 with only its idf swapped for the Lucene form memvec documents
    (rank_bm25 floors negative idf at eps * mean idf instead); tf saturation and length
    normalization are rank_bm25's own code."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        n = self.corpus_size
        self.idf = {term: math.log1p((n - df + 0.5) / (df + 0.5)) for term, df in nd.items()}


def reference(corpus_tokens: list[list[str]], k1: float, b: float) -> BM25Okapi:
    return LuceneIdfBM25(corpus_tokens, k1=k1, b=b)


@pytest.mark.parametrize("corpus_name", ["stdlib", "locomo"])
@pytest.mark.parametrize("k1, b", [(1.2, 0.75), (1.5, 0.75), (0.9, 0.4)])
def test_scores_equal_rank_bm25_on_a_real_corpus(corpus_name: str, k1: float, b: float) -> None:
    corpus = stdlib_docstrings() if corpus_name == "stdlib" else locomo_turns()
    if corpus_name == "locomo":
        require_data(LOCOMO)
    assert len(corpus) > 200
    index = BM25Index(k1=k1, b=b)
    index.add(list(range(1, len(corpus) + 1)), corpus)
    ref = reference([tokenize(doc) for doc in corpus], k1, b)
    for query in QUERIES:
        ours = index.scores_for(index.query_scores(query), list(range(1, len(corpus) + 1)))
        expected = ref.get_scores(tokenize(query))
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)
        top_ids, top_scores = index.search(query, 10)
        positive = expected[expected > 0]
        assert len(top_ids) == min(10, len(positive))
        np.testing.assert_allclose(top_scores, np.sort(positive)[::-1][:10], rtol=1e-5)


def test_incremental_add_and_remove_equal_a_fresh_build() -> None:
    corpus = stdlib_docstrings(400)
    ids = list(range(1, len(corpus) + 1))
    grown = BM25Index()
    grown.add(ids, corpus)
    removed = ids[::3]
    grown.remove(removed)  # two thirds survive: compaction runs
    grown.add([9999], ["a late document about json files"])
    survivors = [(i, d) for i, d in zip(ids, corpus, strict=True) if i not in set(removed)]
    fresh = BM25Index()
    fresh.add([i for i, _ in survivors] + [9999], [d for _, d in survivors] + ["a late document about json files"])
    assert len(grown) == len(fresh)
    for query in QUERIES:
        a_ids, a_scores = grown.search(query, 20)
        b_ids, b_scores = fresh.search(query, 20)
        np.testing.assert_array_equal(a_ids, b_ids)
        np.testing.assert_allclose(a_scores, b_scores, rtol=1e-5)


FRUIT = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "honey", "iris", "jade", "kiwi", "lemon"]
words = st.sampled_from(FRUIT)
documents = st.lists(st.lists(words, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=25)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 30), st.lists(words, min_size=1, max_size=8).map(" ".join)),
        st.tuples(st.just("remove"), st.integers(0, 30), st.just("")),
        st.tuples(st.just("reload"), st.just(0), st.just("")),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=80, deadline=None)
@given(ops=operations, query=st.lists(words, min_size=1, max_size=3), recent=st.sampled_from([1, 5, 50_000]))
@pytest.mark.slow
def test_property_any_history_scores_like_the_reference(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, str]], query: list[str], recent: int
) -> None:
    """Adds (re-adds replace), removes, merges of the recent segment (every 1 or 5 postings, or
    never) and save/load round trips in any order: the sparse scores equal rank_bm25's on the
    documents that survive, the top-k is theirs, and each scored document keeps its group."""
    index, docs = BM25Index(recent_postings=recent), {}
    path = tmp_path_factory.mktemp("bm25") / "lexical.npz"
    for op, record_id, text in ops:
        if op == "add":
            index.add_fields(record_id, [(tokenize(text), 1.0)], group=record_id % 5 - 1)
            docs[record_id] = text
        elif op == "remove":
            index.remove([record_id])
            docs.pop(record_id, None)
        else:
            index.save(path)
            index = BM25Index.load(path)
            index._recent_limit = recent
    assert sorted(docs) == index.ids().tolist() and len(index) == len(docs)
    if not docs:
        assert len(index.query_scores(" ".join(query))) == 0
        return
    ids = sorted(docs)
    expected = reference([tokenize(docs[i]) for i in ids], 0.9, 0.4).get_scores(tokenize(" ".join(query)))
    scored = index.query_scores(" ".join(query))
    np.testing.assert_allclose(index.scores_for(scored, ids), expected, rtol=1e-5, atol=1e-6)
    assert sorted(scored.ids.tolist()) == [i for i, e in zip(ids, expected, strict=True) if e > 0]
    np.testing.assert_array_equal(scored.groups, scored.ids % 5 - 1)  # each document's group, -1 included
    top_ids, _ = index.search(" ".join(query), 5)
    order = sorted((-e, i) for i, e in zip(ids, expected, strict=True) if e > 0)[:5]
    np.testing.assert_allclose(sorted(-e for e, _ in order), sorted(index.scores_for(scored, top_ids)), rtol=1e-5)


def test_a_query_reads_only_its_posting_lists() -> None:
    """Scores come back for the documents holding a query term only, not one per document."""
    index = BM25Index(recent_postings=100)
    index.add(list(range(5000)), [f"common words here and token{i}" for i in range(5000)])
    scored = index.query_scores("token42 token4999")
    assert sorted(scored.ids.tolist()) == [42, 4999]
    assert len(index.query_scores("nothing matches")) == 0


def test_an_old_format_file_is_refused_as_old_not_as_damaged(tmp_path: Path) -> None:
    with open(tmp_path / "lexical.npz", "wb") as fh:
        np.savez(fh, params=np.array([0.9, 0.4]), terms=np.zeros(0, np.uint8))
    with pytest.raises(OldIndexFormatError, match="BM25 file format 0"):
        BM25Index.load(tmp_path / "lexical.npz")


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    corpus = stdlib_docstrings(300)
    index = BM25Index(k1=1.4, b=0.6)
    index.add(list(range(len(corpus))), corpus)
    index.remove([0, 1, 2])
    index.save(tmp_path / "lexical.npz")
    loaded = BM25Index.load(tmp_path / "lexical.npz")
    assert (loaded.k1, loaded.b, len(loaded)) == (1.4, 0.6, len(index))
    for query in QUERIES:
        np.testing.assert_array_equal(loaded.search(query, 10)[0], index.search(query, 10)[0])
    loaded.add([5000], ["a brand new json document"])
    assert 5000 in loaded.search("json document", 3)[0]


def test_allowed_ids_restrict_results() -> None:
    index = BM25Index()
    index.add([1, 2, 3], ["json parser", "json writer", "yaml parser"])
    ids, _ = index.search("json", 10, allowed=np.array([2, 3]))
    assert ids.tolist() == [2]


def test_tokenizer_stems_drops_stopwords_and_keeps_identifiers() -> None:
    assert tokenize("The runner was running; she RUNS!") == ["runner", "run", "run"]
    assert "3f2a9c1e" in tokenize("key 3f2a9c1e-77b0 is set")
    assert tokenize("not no") == ["not", "no"]
    assert plain_tokens("The The cat") == {"the", "cat"}
