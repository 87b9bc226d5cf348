"""The learned ranker (memvec.search.rerank): used by default for the model it was fitted with,
plain fusion otherwise, the same features and scores through the Python API, the CLI and the
service, and a deterministic fit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from benchmarks.train_ranker import Question, fit
from memvec import Memory
from memvec.embed import Embedder
from memvec.search import rerank
from memvec.search.rerank import FEATURES, Ranker, shipped_ranker
from tests.conftest import run_cli
from tests.service_helpers import Server

REAL_MODEL = "onnx-int8:all-MiniLM-L6-v2"
TURNS = [  # (speaker, session, text)
    ("Caroline", "1", "I went to a LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "1", "That sounds great! What happened there?"),
    ("Caroline", "1", "People shared their transgender stories; I felt accepted."),
    ("Melanie", "2", "I painted a lake sunrise last year, it is my favourite painting."),
    ("Caroline", "2", "Wow, you should show it at the art fair next month."),
    ("Melanie", "2", "My kids love going camping at the beach with me."),
    ("Caroline", "3", "I am researching adoption agencies because I want to be a mom."),
    ("Melanie", "3", "Running helps me clear my head after long days at work."),
]
QUERIES = ["What did Caroline research?", "When did Melanie paint a sunrise?", "Where does Melanie camp?",
           "What support group did Caroline attend?"]



def fill(mem: Memory, agent: str = "conv") -> None:
    for turn, (speaker, session, text) in enumerate(TURNS, start=1):
        mem.recall(agent).append(speaker, text, session_id=session, turn_id=turn)


@pytest.fixture
def conversation(real_memory: Memory) -> Memory:
    fill(real_memory)
    return real_memory


def test_the_shipped_ranker_is_used_by_default(conversation: Memory) -> None:
    ranker = shipped_ranker()
    assert ranker is not None and ranker.applies_to(conversation.model_id)
    for query in QUERIES:
        hits = conversation.recall("conv").search(query, k=5)
        assert all(h.scores.ranker is not None and h.score == pytest.approx(h.scores.ranker) for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        fused = conversation.recall("conv").search(query, k=5, rerank=False)
        assert all(h.scores.ranker is None for h in fused)


ANSWERS = {"What did Caroline research?": 7, "When did Melanie paint a sunrise?": 4, "Where does Melanie camp?": 6,
           "What support group did Caroline attend?": 1}


def test_the_ranker_puts_the_answer_first_on_a_small_tier(conversation: Memory) -> None:
    """Far from the 50-candidate lists it was fitted on (8 records, 2 speakers), the ranker must
    still rank sanely (a model with pairwise feature products put an unrelated turn first on a
    two-record tier: tests/test_real_model.py caught it)."""
    for query, turn in ANSWERS.items():
        top = conversation.recall("conv").search(query, k=3)[0]
        assert top.scores.ranker is not None and top.citation.turn_id == str(turn), (query, top.text)


def test_without_the_ranker_search_ranks_by_fusion(conversation: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {q: [(h.id, h.score) for h in conversation.recall("conv").search(q, k=5, rerank=False)]
                for q in QUERIES}
    conversation.engine.ranker = None  # a package without the file, or a config that turns it off
    for query in QUERIES:
        assert [(h.id, h.score) for h in conversation.recall("conv").search(query, k=5)] == expected[query]
    monkeypatch.setattr(rerank, "RANKER_FILE", "no-such-ranker.json")
    shipped_ranker.cache_clear()
    try:
        assert shipped_ranker() is None
    finally:
        monkeypatch.undo()
        shipped_ranker.cache_clear()


def test_a_model_the_ranker_was_not_fitted_for_ranks_by_fusion(memory: Memory) -> None:
    fill(memory)  # the hashing embedder
    hits = memory.recall("conv").search("What did Caroline research?", k=5)
    assert hits and all(h.scores.ranker is None for h in hits)


def test_the_ranker_reorders_by_its_features(conversation: Memory) -> None:
    """Planting a bug in a feature (the speaker named in the query) changes the ranking, so the
    ranker reads what it is given; the order then follows the ranker's own scores."""
    request = {"agent": "conv", "tier": "recall", "query": "What did Caroline research?", "k": 8}
    from memvec import SearchRequest

    ids, features = conversation.engine.candidate_features(SearchRequest.model_validate(request), 50)
    ranker = conversation.engine.ranker
    assert ranker is not None and features.shape == (len(ids), len(FEATURES))
    learned = ranker.score(features, "recall")
    expected = [int(i) for i in ids[np.lexsort((ids, -learned))][:8]]
    assert [h.id for h in conversation.search(SearchRequest.model_validate(request))] == expected
    named = FEATURES.index("speaker_named")
    assert features[:, named].sum() > 0, "the query names Caroline: her turns carry the feature"


def test_features_and_scores_agree_across_python_cli_and_service(tmp_path: Path, minilm_int8: Embedder) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=minilm_int8) as mem:
        fill(mem)
        expected = {q: [(h.id, round(h.score, 5)) for h in mem.recall("conv").search(q, k=5)] for q in QUERIES}
    for query in QUERIES:
        out = run_cli("search", query, "--agent", "conv", "--tier", "recall", "-k", "5", "--json", home=home).stdout
        assert [(h["id"], round(h["score"], 5)) for h in json.loads(out)] == expected[query], query
    server = Server(home, model=REAL_MODEL).start()
    try:
        for query in QUERIES:
            found = httpx.get(f"{server.url}/v1/agents/conv/recall-memory/search", timeout=60,
                              params={"query": query, "top_k": 5}).json()["results"]
            assert [(int(h["id"]), round(h["scores"]["ranker"], 5)) for h in found] == expected[query], query
    finally:
        server.stop()


def synthetic_questions(seed: int) -> list[Question]:
    rng = np.random.default_rng(seed)
    questions = []
    for n in range(60):
        features = rng.normal(size=(20, len(FEATURES)))
        keys = [f"k{i}" for i in range(20)]
        relevant = int(np.argmax(features[:, 0] + 0.5 * rng.normal(size=20)))
        questions.append(Question(f"c{n % 3}", "recall" if n % 2 else "archival", features, keys, {keys[relevant]}))
    return questions


def test_fitting_is_deterministic_and_the_file_round_trips(tmp_path: Path) -> None:
    questions = synthetic_questions(7)
    first, second = fit(questions, ("m",)), fit(questions, ("m",))
    assert json.dumps(first.to_json()) == json.dumps(second.to_json())
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(first.to_json()))
    loaded = Ranker.load(path)
    features = questions[0].features
    np.testing.assert_array_equal(loaded.score(features, "recall"), first.score(features, "recall"))
    # the signal the data was made from gets the largest weight
    assert int(np.argmax(first.tiers["recall"].weights[:len(FEATURES)])) == 0


@pytest.fixture
def shipped_file() -> Iterator[dict[str, object]]:
    path = Path(rerank.__file__).with_name(rerank.RANKER_FILE)
    yield json.loads(path.read_text())


def test_the_shipped_file_names_its_features_models_and_version(shipped_file: dict[str, object]) -> None:
    assert shipped_file["format"] == "memvec-ranker" and shipped_file["features"] == list(FEATURES)
    assert shipped_file["models"] == [REAL_MODEL] and set(shipped_file["tiers"]) == {"archival", "recall"}  # type: ignore[arg-type]
