"""The LongMemEval_S and SciFact families of the benchmark: what is loaded from the shared data and how
it is scored, on the real files (they are read, not embedded: the smoke run of `make bench` embeds)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks import longmemeval, ranker_data, scifact
from benchmarks.datasets import Query
from benchmarks.families import LONGMEMEVAL, NAMES_A_PERIOD, SCIFACT, family_tasks, score
from benchmarks.periods import MODES, SHOWN, naming_a_period
from benchmarks.periods import markdown as periods_markdown
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


def test_the_unseen_questions_are_neither_reported_nor_fitted_on(needs_data: None) -> None:
    questions = longmemeval.load(LONGMEMEVAL_FILE)

    def ids(chosen: list[dict[str, object]]) -> set[object]:
        return {q["question_id"] for q in chosen}

    unseen = ids(ranker_data.longmemeval_unseen(questions))
    reported = ids(longmemeval.subset(questions, longmemeval.PER_TYPE_DEFAULT))
    fitted = ids(ranker_data.longmemeval_dev(questions, ranker_data.PER_TYPE_DEV))
    assert unseen and not unseen & (reported | fitted)
    assert unseen | reported | fitted == ids(longmemeval.subset(questions, None))
    tasks = family_tasks(LONGMEMEVAL_FILE, SCIFACT_DIR, "unseen")
    assert list(tasks) == [LONGMEMEVAL.name] and {t.queries[0].qid for t in tasks[LONGMEMEVAL.name][1]} == unseen


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


def test_questions_naming_a_period_are_reported_apart_as_of_when_they_were_asked() -> None:
    asked = datetime(2023, 5, 20, tzinfo=UTC)
    rows = [
        (["a"], Query("q1", "what did I buy two weeks ago?", {"a"}, "temporal-reasoning", asked_at=asked)),
        (["c"], Query("q2", "which gym did I join?", {"b"}, "single-session-user", asked_at=asked)),
        (["d"], Query("q3", "what did I read in 2019?", {"d"}, "multi-session")),
    ]
    groups = score(longmemeval.summarize, rows)["by_category"]
    assert groups[NAMES_A_PERIOD]["n"] == 2 and groups[NAMES_A_PERIOD]["recall@1"] == 1.0
    assert groups["single-session-user"]["recall@1"] == 0.0 and len(groups) == 4


def test_the_periods_benchmark_takes_the_questions_naming_a_period(needs_data: None) -> None:
    picked = naming_a_period(longmemeval.load(LONGMEMEVAL_FILE))
    assert 10 <= len(picked) < 30 and any("weeks ago" in q["question"] for q in picked)
    scores = {mode: {m: 0.5 for m in SHOWN} for mode in MODES}
    rows = periods_markdown({"questions": [{"id": "q", "type": "t", "question": "in May?"}], "scores": scores})
    assert sum(line.startswith("| ") for line in rows) == len(MODES) + 3
