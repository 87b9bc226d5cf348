"""What the relevance calibration is fitted and judged on: questions asked of memories, each hit's
own scores (its cosine and its BM25 coverage of the query) and whether it is evidence.

Three kinds of question: *answerable* (a family's own questions of its own memory, with evidence),
*foreign* (another family's questions asked of this memory: nothing there answers them) and
*abstention* (LongMemEval's `_abs` questions, asked of their own haystack, which does not hold the
answer). Each family's memories and questions are split the way the other learned parts are:
the *dev* half is fitted on, the *held* half only reported.

- LoCoMo: conversations 1, 3, 5 dev, 2 and 4 held (a conversation is the group), both tiers.
- LongMemEval_S: some of the ranker's dev questions and the extra file's abstention questions dev; the
  questions `make bench` reports and the dev file's abstention questions held.
- SciFact: the corpus once; training claims of folds 1-4 dev, fold 0 held.

Foreign questions asked of a memory come from the other families' questions of the same half.
Building the memories is most of the time (LongMemEval's haystacks), so each half's rows are
cached under `indexes/cache/relevance/`, keyed like the ranker's candidates.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import longmemeval, ranker_data, scifact
from benchmarks.datasets import Query, Task, load_locomo, locomo_archival_task, locomo_recall_task
from benchmarks.harness import load_task
from memvec import SearchRequest
from memvec.embed import Embedder
from memvec.search.hybrid import known

K = 10
EXTRA_FILE = "longmemeval-s-extra.jsonl"  # beside the dev file
FOREIGN_PER_FAMILY = 40  # another family's questions asked of each memory
DEV_CONVERSATIONS, HELD_CONVERSATIONS = (0, 2, 4), (1, 3)  # positions in the LoCoMo file
# LongMemEval_S haystacks cost about a minute each to build: the dev half takes 2 questions of each
# type after those `make bench` reports, and the extra file's first 8 abstention questions.
DEV_PER_TYPE, DEV_ABSTENTION = 2, 8
CACHE = ranker_data.ROOT / "indexes" / "cache" / "relevance"
CACHE_VERSION = 2


@dataclass
class Asked:
    """One question asked of one memory, and its first K hits' own scores."""

    family: str  # the memory's family (LoCoMo with its tier)
    group: str  # what it is held out by: a conversation, a LongMemEval question, a SciFact fold
    kind: str  # "answerable", "foreign" or "abstention"
    question: str
    vector: list[float]
    coverage: list[float]
    evidence: list[bool]  # each hit's
    known: float = 1.0  # the share of the query's BM25 ceiling from words the memory holds
    lengths: list[float] | None = None  # each hit's indexed length (weighted tokens)


@dataclass
class Half:
    """One half (dev or held) of every family: the memories' tasks and each family's questions."""

    locomo: list[Task]
    longmemeval: list[tuple[Task, str]]  # each haystack with its question's kind
    scifact: Task | None
    foreign_per_family: int = FOREIGN_PER_FAMILY

    def questions(self, family: str) -> list[Query]:
        if family == "LoCoMo":
            return [q for task in self.locomo[::2] for q in task.queries]  # each conversation's once
        if family == "LongMemEval_S":
            return [task.queries[0] for task, kind in self.longmemeval if kind == "answerable"]
        return self.scifact.queries if self.scifact else []


def half(name: str, locomo: Path, longmemeval_dev: Path, longmemeval_extra: Path, scifact_folder: Path) -> Half:
    samples = load_locomo(locomo)
    chosen = DEV_CONVERSATIONS if name == "dev" else HELD_CONVERSATIONS
    tasks = [make(samples[n]) for n in chosen for make in (locomo_recall_task, locomo_archival_task)]
    questions = longmemeval.load(longmemeval_dev)
    if name == "dev":
        answerable = ranker_data.longmemeval_dev(questions, DEV_PER_TYPE)
        abstaining = _abstention(longmemeval.load(longmemeval_extra))[:DEV_ABSTENTION]
        folds = ranker_data.SCIFACT_DEV_FOLDS
    else:
        answerable = longmemeval.subset(questions, longmemeval.PER_TYPE_DEFAULT)
        abstaining = _abstention(questions)
        folds = frozenset({0})
    haystacks = [(longmemeval.task(q), "answerable") for q in answerable]
    haystacks += [(longmemeval.task(q), "abstention") for q in abstaining]
    return Half(tasks, haystacks, scifact.task(scifact_folder, set(folds)))


def quick(part: Half) -> Half:
    """A smoke-run size of a half: one conversation's first records, one haystack of each kind cut
    to its first records and its evidence, a few SciFact claims over a few hundred abstracts."""
    haystacks = [next((t, k) for t, k in part.longmemeval if k == kind) for kind in ("answerable", "abstention")]
    return Half(
        [_first(task, 120, 20) for task in part.locomo[:2]],
        [(_first(task, 40, 1, keep_evidence=True), kind) for task, kind in haystacks],
        scifact.smaller(part.scifact, 10, 60) if part.scifact else None,
        foreign_per_family=5,
    )


def _first(task: Task, docs: int, questions: int, *, keep_evidence: bool = False) -> Task:
    """The first `docs` records (and the evidence past them, with `keep_evidence`), and the first
    `questions` whose evidence is all among them."""
    evidence = set().union(*(q.evidence for q in task.queries[:questions])) if keep_evidence else set()
    kept = task.docs[:docs] + [d for d in task.docs[docs:] if d.key in evidence]
    held = {d.key for d in kept}
    return Task(task.name, task.tier, kept, [q for q in task.queries if q.evidence <= held][:questions])


def _abstention(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for q in questions if q["question_id"].endswith("_abs")]


def memories(part: Half) -> Iterator[tuple[str, str, Task, str]]:
    """(family, group, task, kind of its own questions) for every memory of the half."""
    for task in part.locomo:
        yield f"LoCoMo {task.tier}", task.name.split("/")[-1], task, "answerable"
    for task, kind in part.longmemeval:
        yield "LongMemEval_S", task.queries[0].qid, task, kind
    if part.scifact is not None:
        yield "SciFact", "corpus", part.scifact, "answerable"


def foreign(part: Half, family: str, seed: str) -> list[Query]:
    """The half's `foreign_per_family` questions of each other family, the same for a memory on every run."""
    picked: list[Query] = []
    for other in ("LoCoMo", "LongMemEval_S", "SciFact"):
        if other != family.split()[0]:
            pool = part.questions(other)
            picked += random.Random(f"{seed}/{other}").sample(pool, min(part.foreign_per_family, len(pool)))
    return [Query(q.qid, q.text, set(), "foreign", asked_at=q.asked_at) for q in picked]


def asked_of(task: Task, family: str, group: str, kind: str, extra: list[Query], embedder: Embedder) -> list[Asked]:
    """Every question of the task (of `kind`) and the `extra` foreign ones, asked with default search."""
    agent = re.sub(r"[^A-Za-z0-9_.-]", "-", task.name)[:60]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = load_task(Path(tmp), embedder, task, agent)
        by_id: dict[int, str] = {}
        try:
            for query, query_kind in [(q, kind) for q in task.queries] + [(q, "foreign") for q in extra]:
                request = SearchRequest.model_validate(
                    {"agent": agent, "tier": task.tier, "query": query.text, "k": K, "reference_time": query.asked_at}
                )
                hits = mem.search(request)
                for hit in hits:
                    by_id.setdefault(hit.id, hit.citation.turn_id or "")
                lexical = mem._engine.tier_index(agent, request.tier).lexical
                scored = lexical.query_scores(query.text)
                rows.append(
                    Asked(
                        family,
                        group,
                        query_kind,
                        query.qid,
                        [h.scores.vector or 0.0 for h in hits],
                        [h.scores.coverage or 0.0 for h in hits],
                        [by_id[h.id] in query.evidence for h in hits],
                        known(scored),
                        lexical.lengths_for([h.id for h in hits]).tolist(),
                    )
                )
        finally:
            mem.close()
    return rows


def collect(part: Half, embedder: Embedder, progress: Callable[[str], None] = print) -> list[Asked]:
    rows: list[Asked] = []
    for family, group, task, kind in memories(part):
        progress(f"{family} {group}: {len(task.docs)} records")
        rows += asked_of(task, family, group, kind, foreign(part, family, f"{family}/{group}"), embedder)
    return rows


def cached(name: str, key: str, build: Callable[[], list[Asked]]) -> list[Asked]:
    path = CACHE / f"{name}-{key}.json"
    if path.exists():
        return [Asked(**row) for row in json.loads(path.read_text())]
    rows = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps([asdict(row) for row in rows]))
    scratch.replace(path)
    return rows


def paths_under(data: Path) -> tuple[Path, Path, Path, Path]:
    """LoCoMo, LongMemEval_S dev and extra, and SciFact's folder under the data folder (../shared/data)."""
    return (
        data / "locomo" / "locomo-dev.json",
        data / "longmemeval" / "longmemeval-s-dev.jsonl",
        data / "longmemeval" / EXTRA_FILE,
        data / "scifact",
    )


def rows_of(name: str, paths: tuple[Path, Path, Path, Path], embedder: Embedder) -> list[Asked]:
    """The half's rows, from the cache when the model, the code's version and the data files are the same."""
    sources = [paths[0], paths[1], paths[2], paths[3] / "corpus.jsonl", paths[3] / "queries-train.jsonl"]
    key = ranker_data.cache_key(f"relevance-{name}", embedder.model_id, sources, str(CACHE_VERSION))
    return cached(name, key, lambda: collect(half(name, *paths), embedder))
