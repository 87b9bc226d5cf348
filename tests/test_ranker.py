"""The learned ranker (memvec.search.rerank): used by default for the model it was fitted with,
plain fusion otherwise, the same features and scores through the Python API, the CLI and the
service, and a deterministic fit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.ranker_data import Question
from benchmarks.train_ranker import fit
from memvec import Memory, SearchRequest
from memvec.embed import Embedder
from memvec.search import rerank
from memvec.search.rerank import FEATURES, Ranker, shipped_ranker, shipped_rankers
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
CONTEXT_OF_TURNS = {"length_log": 2.5, "in_session": 1.0}
QUERIES = [
    "What did Caroline research?",
    "When did Melanie paint a sunrise?",
    "Where does Melanie camp?",
    "What support group did Caroline attend?",
]


def fill(mem: Memory, agent: str = "conv") -> None:
    for turn, (speaker, session, text) in enumerate(TURNS, start=1):
        mem.recall(agent).append(speaker, text, session_id=session, turn_id=turn)


@pytest.fixture
def conversation(real_memory: Memory) -> Memory:
    fill(real_memory)
    return real_memory


def test_the_shipped_ranker_is_used_by_default(conversation: Memory) -> None:
    ranker = shipped_ranker(conversation.model_id)
    assert ranker is not None and ranker.applies_to(conversation.model_id, "convex")
    for query in QUERIES:
        hits = conversation.recall("conv").search(query, k=5)
        assert all(h.scores.ranker is not None and h.score == pytest.approx(h.scores.ranker) for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        fused = conversation.recall("conv").search(query, k=5, rerank=False)
        assert all(h.scores.ranker is None for h in fused)
        # fitted on convex fusion's scores: RRF's live on another scale, so RRF ranks alone
        rrf = SearchRequest.model_validate({"agent": "conv", "tier": "recall", "query": query, "fusion": "rrf"})
        assert all(h.scores.ranker is None for h in conversation.search(rrf))


ANSWERS = {
    "What did Caroline research?": 7,
    "When did Melanie paint a sunrise?": 4,
    "Where does Melanie camp?": 6,
    "What support group did Caroline attend?": 1,
}


def test_the_ranker_fuses_its_candidates_with_the_session_weight_it_was_fitted_with(conversation: Memory) -> None:
    """The ranker reads fused scores: a search it re-orders fuses with its own session weight (2.0),
    fusion alone with 1.0, and a weight the caller gives wins over both."""
    ranker = shipped_ranker(conversation.model_id)
    assert ranker is not None and ranker.session_weight == 2.0

    def fused(**fields: Any) -> dict[int, float]:
        request = SearchRequest.model_validate(
            {"agent": "conv", "tier": "recall", "query": "Caroline support group", "k": 8, **fields}
        )
        return {
            h.id: round(h.scores.fused if h.scores.fused is not None else h.score, 5)
            for h in conversation.search(request)
        }

    reranked = fused()
    assert reranked == {i: s for i, s in fused(rerank=False, session_weight=2.0).items() if i in reranked}
    assert fused(rerank=False) == fused(rerank=False, session_weight=1.0) != fused(rerank=False, session_weight=2.0)
    given = fused(session_weight=0.5)
    assert given == {i: s for i, s in fused(rerank=False, session_weight=0.5).items() if i in given}


def test_a_query_sharing_no_word_ranks_by_fusion(conversation: Memory) -> None:
    """Meaning alone decides (as in the benchmark's paraphrase task): the ranker, fitted on
    questions that share words with their candidates, stays out and the vector ranks."""
    query = "Who looked into becoming a parent through official bodies?"
    hits = conversation.recall("conv").search(query, k=5)
    assert hits and all(h.scores.ranker is None and h.scores.bm25 == 0 for h in hits)
    assert hits == conversation.recall("conv").search(query, k=5, rerank=False)


def test_the_ranker_puts_the_answer_first_on_a_small_tier(conversation: Memory) -> None:
    """Far from the 50-candidate lists it was fitted on (8 records, 2 speakers), the ranker must
    still rank sanely (a model with pairwise feature products put an unrelated turn first on a
    two-record tier: tests/test_real_model.py caught it)."""
    for query, turn in ANSWERS.items():
        top = conversation.recall("conv").search(query, k=3)[0]
        assert top.scores.ranker is not None and top.citation.turn_id == str(turn), (query, top.text)


def test_without_the_ranker_search_ranks_by_fusion(conversation: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {q: [(h.id, h.score) for h in conversation.recall("conv").search(q, k=5, rerank=False)] for q in QUERIES}
    conversation._engine.ranker = None  # a package without the file, or a config that turns it off
    for query in QUERIES:
        assert [(h.id, h.score) for h in conversation.recall("conv").search(query, k=5)] == expected[query]
    monkeypatch.setattr(rerank, "RANKER_FILES", "no-such-ranker*.json")
    shipped_rankers.cache_clear()
    try:
        assert shipped_ranker(conversation.model_id) is None
    finally:
        monkeypatch.undo()
        shipped_rankers.cache_clear()


def test_a_model_the_ranker_was_not_fitted_for_ranks_by_fusion(memory: Memory) -> None:
    fill(memory)  # the hashing embedder
    hits = memory.recall("conv").search("What did Caroline research?", k=5)
    assert hits and all(h.scores.ranker is None for h in hits)


def test_the_ranker_reorders_by_its_features(conversation: Memory) -> None:
    """Planting a bug in a feature (the speaker named in the query) changes the ranking, so the
    ranker reads what it is given; the order then follows the ranker's own scores."""
    request = {"agent": "conv", "tier": "recall", "query": "What did Caroline research?", "k": 8}
    ids, features, _ = conversation._engine.candidate_features(SearchRequest.model_validate(request), 50)
    ranker = conversation._engine.ranker
    assert ranker is not None and features.shape == (len(ids), len(FEATURES))
    learned = ranker.score(features, "recall")
    expected = [int(i) for i in ids[np.lexsort((ids, -learned))][:8]]
    assert [h.id for h in conversation.search(SearchRequest.model_validate(request))] == expected
    named = FEATURES.index("speaker_named")
    assert features[:, named].sum() > 0, "the query names Caroline: her turns carry the feature"


def test_text_features_read_the_candidates_and_the_query(conversation: Memory) -> None:
    def column(query: str, name: str) -> dict[str, float]:
        request = SearchRequest.model_validate({"agent": "conv", "tier": "recall", "query": query, "k": 8})
        ids, features, _ = conversation._engine.candidate_features(request, 50)
        texts = {r.id: r.text for r in conversation._store.get("conv", ids.tolist())}
        return {texts[int(i)]: float(features[n, FEATURES.index(name)]) for n, i in enumerate(ids)}

    time_words = column("When did Melanie paint a sunrise?", "time_words")
    assert time_words[TURNS[3][2]] == 1.0 and time_words[TURNS[0][2]] == 1.0  # "last year", "yesterday"
    assert time_words[TURNS[5][2]] == 0.0
    assert set(column("When did Melanie paint a sunrise?", "asks_time").values()) == {1.0}
    assert set(column("Where does Melanie camp?", "asks_time").values()) == {0.0}
    conversation.recall("conv").append("Melanie", "Was it hard? It sounded powerful.", session_id="1", turn_id=9)
    asks = column("What happened at the support group? Was it hard?", "ends_question")
    assert asks[TURNS[1][2]] == 1.0 and asks[TURNS[2][2]] == 0.0
    assert asks["Was it hard? It sounded powerful."] == 0.0, "a question inside a turn does not end it"
    conversation.recall("conv").append("Caroline", "The support group meets again in May.", session_id="4", turn_id=10)
    after = column("What happened at the support group?", "prev_has_question")
    # turn 3 follows Melanie's question; turn 1 opens its session; turn 7 opens session 3
    assert after[TURNS[2][2]] == 1.0 and after[TURNS[0][2]] == 0.0 and after[TURNS[6][2]] == 0.0
    assert after[TURNS[1][2]] == 0.0, "turn 1 asks nothing"
    assert after["The support group meets again in May."] == 0.0, "the question before it is another session's"


def test_no_candidates_no_features(conversation: Memory) -> None:
    empty = SearchRequest.model_validate({"agent": "nobody", "tier": "recall", "query": "anything"})
    assert conversation._engine.candidate_features(empty, 50)[1].shape == (0, len(FEATURES))


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
            found = httpx.get(
                f"{server.url}/v1/agents/conv/recall-memory/search", timeout=60, params={"query": query, "top_k": 5}
            ).json()["results"]
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
        questions.append(
            Question(f"c{n % 3}", "recall" if n % 2 else "archival", features, keys, {keys[relevant]}, CONTEXT_OF_TURNS)
        )
    return questions


@pytest.mark.slow
def test_fitting_is_deterministic_and_the_file_round_trips(tmp_path: Path) -> None:
    questions = synthetic_questions(7)
    first, second = fit(questions, ("m",)), fit(questions, ("m",))
    assert json.dumps(first.to_json()) == json.dumps(second.to_json())
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(first.to_json()))
    loaded = Ranker.load(path)
    features = questions[0].features
    np.testing.assert_array_equal(loaded.score(features, "recall"), first.score(features, "recall"))
    # the signal the data was made from is the one the trees split on most
    model = first.tiers["recall"]
    assert int(np.argmax(np.bincount(model.feature[model.feature >= 0], minlength=len(FEATURES)))) == 0
    assert loaded.support == {tier: rerank.context_support([CONTEXT_OF_TURNS]) for tier in ("recall", "archival")}


def test_a_closer_record_never_scores_lower() -> None:
    """The fitted trees are monotone in a record's own closeness to the query, even where the
    data they learn from is not (here: relevant at middling vector scores only)."""
    rng = np.random.default_rng(11)
    questions = []
    for n in range(80):
        features = rng.normal(size=(30, len(FEATURES)))
        keys = [f"k{i}" for i in range(30)]
        relevant = int(np.argmin(np.abs(features[:, FEATURES.index("vector")] - 0.5)))
        questions.append(
            Question(f"c{n % 4}", "recall" if n % 2 else "archival", features, keys, {keys[relevant]}, CONTEXT_OF_TURNS)
        )
    ranker = fit(questions, ("m",))
    rows = np.repeat(rng.normal(size=(20, len(FEATURES))), 41, axis=0)
    rows[:, FEATURES.index("vector")] = np.tile(np.linspace(-3, 3, 41), 20)
    for tier in ("recall", "archival"):
        scores = ranker.score(rows, tier).astype(np.float64).reshape(20, 41)
        assert np.all(np.diff(scores, axis=1) >= -1e-7), tier


def test_the_trees_score_as_lightgbm_does() -> None:
    """memvec walks the trees itself; LightGBM's own prediction is the reference, rows sitting
    exactly on split thresholds included (a `<` for `<=` would send them the other way)."""
    import lightgbm

    from benchmarks.train_ranker import ROUNDS, TREE_PARAMS
    from memvec.search.trees import from_nested_trees

    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=(3000, 6)), 1)  # few distinct values: many rows on a threshold
    y = ((x[:, 0] + x[:, 1] * x[:, 2] + 0.3 * rng.normal(size=3000)) > 0).astype(np.float64)
    booster = lightgbm.train(TREE_PARAMS, lightgbm.Dataset(x, y, params={"verbose": -1}), num_boost_round=ROUNDS)
    ensemble = from_nested_trees([t["tree_structure"] for t in booster.dump_model()["tree_info"]])
    assert len(ensemble.roots) == ROUNDS and ensemble.depth >= 2
    np.testing.assert_allclose(ensemble.raw_scores(x), booster.predict(x, raw_score=True), rtol=0, atol=1e-9)
    on_threshold = np.tile(x[:1], (len(ensemble.feature), 1))
    splits = np.flatnonzero(ensemble.feature >= 0)
    on_threshold[splits, ensemble.feature[splits]] = ensemble.threshold[splits]
    np.testing.assert_allclose(
        ensemble.raw_scores(on_threshold), booster.predict(on_threshold, raw_score=True), rtol=0, atol=1e-9
    )


def test_a_ranker_file_that_does_not_fit_is_refused(shipped_file: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="version 1"):
        Ranker.from_json({**shipped_file, "version": 1})
    recall = dict(shipped_file["tiers"]["recall"])
    recall["left"] = [10**6] * len(recall["left"])
    broken = {**shipped_file, "tiers": {**shipped_file["tiers"], "recall": recall}}
    with pytest.raises(ValueError, match="outside the node table"):
        Ranker.from_json(broken)
    with pytest.raises(ValueError, match="does not list"):
        Ranker.from_json({**shipped_file, "features": shipped_file["features"][:3]})


@pytest.fixture
def shipped_file() -> Iterator[dict[str, Any]]:
    path = Path(rerank.__file__).with_name(rerank.RANKER_FILE)
    yield json.loads(path.read_text())


def test_the_shipped_file_names_its_features_models_and_version(shipped_file: dict[str, Any]) -> None:
    assert shipped_file["format"] == "memvec-ranker" and shipped_file["features"] == list(FEATURES)
    assert shipped_file["models"] == [REAL_MODEL, "onnx:all-MiniLM-L6-v2"]  # both ONNX precisions
    assert set(shipped_file["tiers"]) == {"archival", "documents", "recall"}
    assert shipped_file["version"] == rerank.RANKER_VERSION


def test_the_shipped_ranker_ranks_the_records_it_was_fitted_on_and_not_others(shipped_file: dict[str, Any]) -> None:
    """Its support (per tier, the context of the fitted candidate sets) holds conversation turns
    like LoCoMo's and excludes documents without sessions and turns many times longer."""
    ranker = Ranker.from_json(shipped_file)
    for tier in ("recall", "archival"):
        assert set(ranker.support[tier]) == set(rerank.CONTEXT)
        length = ranker.support[tier]["length_log"]
        assert ranker.fits({"length_log": sum(length) / 2, "in_session": 1.0}, tier)
        assert not ranker.fits({"length_log": sum(length) / 2, "in_session": 0.0}, tier)
        assert not ranker.fits({"length_log": length[1] + 1.0, "in_session": 1.0}, tier)


def test_archival_records_without_sessions_like_scifact_abstracts_have_trees_of_their_own(
    shipped_file: dict[str, Any],
) -> None:
    """The documents trees (fitted on SciFact's dev folds) rank an archival tier of long records
    without sessions; passages in sessions keep the archival trees, and the recall tier never
    borrows the documents'."""
    ranker = Ranker.from_json(shipped_file)
    length = ranker.support["documents"]["length_log"]
    abstracts = {"length_log": sum(length) / 2, "in_session": 0.0}
    assert ranker.model_for(abstracts, "archival") == "documents"
    assert ranker.model_for(abstracts, "recall") is None
    passages = {"length_log": sum(ranker.support["archival"]["length_log"]) / 2, "in_session": 1.0}
    assert ranker.model_for(passages, "archival") == "archival"
    assert ranker.model_for({"length_log": length[0] - 1.0, "in_session": 0.0}, "archival") is None


def test_support_is_the_fitted_range_widened_by_its_margin() -> None:
    contexts = [{"length_log": 2.0, "in_session": 1.0}, {"length_log": 3.0, "in_session": 0.9}]
    support = rerank.context_support(contexts)
    assert support["length_log"] == pytest.approx((2.0 - np.log(2), 3.0 + np.log(2)))
    assert support["in_session"] == pytest.approx((0.7, 1.2))
    lengths = np.array([3.0, 20.0, 7.0], dtype=np.float32)
    context = rerank.candidate_context(lengths, np.array([4, -1, 2]))
    assert context == pytest.approx({"length_log": float(np.log1p(7.0)), "in_session": 2 / 3})


def test_a_ranker_without_support_ranks_everything_and_support_round_trips(shipped_file: dict[str, Any]) -> None:
    bare = Ranker.from_json({key: value for key, value in shipped_file.items() if key != "support"})
    assert bare.fits({"length_log": 99.0, "in_session": 0.0}, "recall")
    again = Ranker.from_json(json.loads(json.dumps(Ranker.from_json(shipped_file).to_json())))
    assert again.support == Ranker.from_json(shipped_file).support


ABSTRACT_TOPICS = [
    ("vitamin D", "bone density", "older women", "fractures"),
    ("statins", "cholesterol", "middle-aged men", "heart attacks"),
    ("aspirin", "platelets", "diabetic patients", "strokes"),
    ("exercise", "insulin resistance", "obese adolescents", "type 2 diabetes"),
    ("sleep loss", "memory consolidation", "students", "test scores"),
    ("air pollution", "lung function", "children", "asthma attacks"),
]


def abstract(drug: str, measure: str, people: str, outcome: str) -> str:
    """A record shaped like a SciFact abstract: a title and ~150 words of findings, no session."""
    return (
        f"Effects of {drug} on {measure} in {people}. Background: the role of {drug} in {measure} among {people} "
        f"remains debated, and earlier trials of {drug} were small. Methods: we randomly assigned 2,400 {people} to "
        f"{drug} or placebo for three years and measured {measure} every six months with standard clinical tests. "
        f"The primary outcome was the rate of {outcome}; secondary outcomes were changes in {measure}, adverse events "
        f"and adherence. Results: {drug} changed {measure} by a modest amount compared with placebo, and {outcome} "
        f"occurred in fewer {people} given {drug} than in those given placebo, although the difference in {outcome} "
        f"was smaller among those with the lowest {measure} at baseline. Adverse events were similar in both groups. "
        f"Conclusions: in {people}, {drug} reduced {outcome} and improved {measure}; larger trials should confirm "
        f"whether the benefit of {drug} holds over longer periods and in other populations."
    )


def test_abstracts_rank_by_the_documents_trees_and_short_notes_by_fusion(real_memory: Memory) -> None:
    for topic in ABSTRACT_TOPICS:
        real_memory.archival("papers").insert(abstract(*topic))
    found = real_memory.archival("papers").search("statins lower the rate of heart attacks in men", k=3)
    assert found[0].text.startswith("Effects of statins") and all(h.scores.ranker is not None for h in found)


def test_documents_without_sessions_rank_by_fusion_alone(real_memory: Memory) -> None:
    for text in (
        "Boosted trees rank candidates by features.",
        "FAISS searches vectors by inner product.",
        "BM25 scores words by their rarity and frequency.",
        "Caroline researched adoption agencies.",
    ):
        real_memory.archival("docs").insert(text)
    fill(real_memory, "docs")
    documents = real_memory.archival("docs").search("what ranks candidates", k=4)
    assert documents and all(h.scores.ranker is None for h in documents)
    turns = real_memory.recall("docs").search("What did Caroline research?", k=4)
    assert turns and all(h.scores.ranker is not None for h in turns)


@given(st.lists(st.tuples(st.integers(-1, 6), st.floats(0, 1), st.sampled_from([0.0, 0.25, 1.0])), max_size=128))
def test_the_session_best_features_are_the_same_by_matrix_and_by_sorting(
    rows: list[tuple[int, float, float]],
) -> None:
    sessions = np.array([r[0] for r in rows], dtype=np.int64)
    vector, share = (np.array([r[i] for r in rows], dtype=np.float64) for i in (1, 2))  # ties in share
    if not rows:
        return
    by_matrix = rerank.session_best(sessions, vector, share)
    by_sorting = rerank.session_best_sorted(sessions, vector, share)
    assert [b.tolist() for b in by_matrix[0]] == [b.tolist() for b in by_sorting[0]]
    assert by_matrix[1].tolist() == by_sorting[1].tolist()


def test_session_best_is_the_best_other_score_of_the_same_session() -> None:
    sessions = np.array([3, 3, -1, 5, 3, -1], dtype=np.int64)
    scores = np.array([0.2, 0.9, 0.8, 0.4, 0.5, 0.1])
    for way in (rerank.session_best, rerank.session_best_sorted):
        (best,), count = way(sessions, scores)
        assert best.tolist() == [0.9, 0.5, 0.0, 0.0, 0.9, 0.0] and count.tolist() == [3, 3, 1, 1, 3, 1]


@given(st.lists(st.floats(0, 1e6, width=32), max_size=120))
def test_the_median_length_is_numpys_to_the_bit(lengths: list[float]) -> None:
    values = np.array(lengths, dtype=np.float32)
    if not lengths:
        return
    assert rerank.log_median(values) == float(np.median(np.log1p(values)))


ROLES = [None, "", "Caroline", "caroline", "CAROLINE", "Melanie", "user", "Ana", "José", "JOSÉ", "Zoë"]


@given(
    st.lists(st.sampled_from(ROLES), max_size=60),
    st.sampled_from(["what did caroline say", "ana and Melanie?", "did josé call zoë?", "user", "nothing here"]),
)
def test_a_speaker_is_named_by_any_case_of_their_name_and_the_others_are_not(
    speakers: list[str | None], query: str
) -> None:
    words = set(query.casefold().rstrip("?").split())
    named_roles = {(role or "").casefold() for role in speakers} & words
    named, other = rerank.speakers_named(query, speakers)
    assert named.tolist() == [float((role or "").casefold() in named_roles) for role in speakers]
    assert other.tolist() == [
        float(bool(named_roles) and (role or "").casefold() not in named_roles) for role in speakers
    ]


def test_records_without_sessions_have_no_neighbours(real_memory: Memory) -> None:
    """Consecutive ids outside any session are not each other's turns: their neighbour and session
    features stay zero, however question-like the record before."""
    for text in ["Did the boiler get fixed?", "The boiler was fixed on Monday.", "Is the boiler warm now?"]:
        real_memory.archival("notes").insert(text)
    request = SearchRequest.model_validate({"agent": "notes", "tier": "archival", "query": "boiler fixed", "k": 3})
    ids, features, _ = real_memory._engine.candidate_features(request, 50)
    assert len(ids) == 3
    for name in (
        "prev_vector",
        "next_vector",
        "neighbour_bm25_share",
        "prev_has_question",
        "session_best_vector",
        "session_best_bm25_share",
        "session_candidates_log",
    ):
        assert features[:, FEATURES.index(name)].tolist() == [0.0, 0.0, 0.0], name
