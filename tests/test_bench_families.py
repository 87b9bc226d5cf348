"""The LongMemEval_S and SciFact families of the benchmark: what is loaded from the shared data and how
it is scored, on the real files (they are read, not embedded: the smoke run of `make bench` embeds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import longmemeval, scifact
from benchmarks.datasets import Query
from benchmarks.families import LONGMEMEVAL, SCIFACT, family_tasks
from tests.conftest import SHARED_DATA, require_data

LONGMEMEVAL_FILE = SHARED_DATA / "longmemeval" / "longmemeval-s-dev.jsonl"
SCIFACT_DIR = SHARED_DATA / "scifact"


@pytest.fixture
def needs_data() -> None:
    """CI has the shared data: there a missing file fails the tests instead of skipping them."""
    require_data(LONGMEMEVAL_FILE)
    require_data(SCIFACT_DIR)


def test_a_longmemeval_question_becomes_its_haystack_and_its_evidence(needs_data: None) -> None:
    question = longmemeval.subset(longmemeval.load(LONGMEMEVAL_FILE), per_type=1)[0]
    task = longmemeval.task(question)
    turns = sum(len(session) for session in question["haystack_sessions"])
    assert len(task.docs) == turns and task.tier == "recall"
    (query,) = task.queries
    marked = {d.key for d in task.docs if d.key in query.evidence}
    assert marked == query.evidence and query.evidence
    assert {longmemeval.session_of(k) for k in query.evidence} <= query.sessions == set(question["answer_session_ids"])
    assert query.asked_at is not None and all(
        d.created_at is not None and d.role in {"user", "assistant"} for d in task.docs
    )


def test_the_subsets_are_deterministic_and_skip_abstention_questions(needs_data: None) -> None:
    questions = longmemeval.load(LONGMEMEVAL_FILE)
    default = longmemeval.subset(questions, longmemeval.PER_TYPE_DEFAULT)
    assert default == longmemeval.subset(questions, longmemeval.PER_TYPE_DEFAULT)
    types = {q["question_type"] for q in questions}
    assert len(default) == len(types) * longmemeval.PER_TYPE_DEFAULT
    assert not any(q["question_id"].endswith("_abs") for q in longmemeval.subset(questions, None))
    smoke = longmemeval.smaller(default[0])
    assert set(default[0]["answer_session_ids"]) <= set(smoke["haystack_session_ids"])
    assert len(smoke["haystack_sessions"]) < len(default[0]["haystack_sessions"])


def test_scifact_claims_keep_their_judged_abstracts_and_folds_split_them(needs_data: None) -> None:
    every = scifact.task(SCIFACT_DIR)
    assert len(every.docs) == 5183 and len(every.queries) == 809
    folds = [scifact.task(SCIFACT_DIR, {fold}).queries for fold in range(scifact.FOLDS)]
    assert sorted(q.qid for fold in folds for q in fold) == sorted(q.qid for q in every.queries)
    keys = {d.key for d in every.docs}
    assert all(q.evidence and q.evidence <= keys for q in every.queries)
    tasks = family_tasks(LONGMEMEVAL_FILE, SCIFACT_DIR, "quick")
    (quick,) = tasks[SCIFACT.name][1]
    assert set().union(*(q.evidence for q in quick.queries)) <= {d.key for d in quick.docs}
    assert len(tasks[LONGMEMEVAL.name][1]) == 1


def test_session_recall_reads_the_session_of_each_top_turn() -> None:
    query = Query("q", "?", {longmemeval.turn_key("s2", 4, 3)}, "multi-session", sessions={"s2", "s7"})
    ranked = [
        longmemeval.turn_key("s1", 0, 0),
        longmemeval.turn_key("s2", 4, 3),
        longmemeval.turn_key("s2", 4, 5),
        longmemeval.turn_key("s9", 9, 1),
        longmemeval.turn_key("s1", 0, 2),
        longmemeval.turn_key("s7", 8, 0),
    ]
    summary = longmemeval.summarize([(ranked, query)])
    assert summary["recall@1"] == 0.0 and summary["recall@5"] == 1.0
    assert summary["session_any@5"] == 1.0 and summary["session_all@5"] == 0.0  # s7 only at rank 6
    assert summary["session_all@10"] == 1.0


def test_a_missing_file_names_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="xiaowu0162/LongMemEval"):
        longmemeval.load(tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError, match="BEIR"):
        scifact.task(tmp_path)
