"""Benchmark tasks: LoCoMo (real conversations) and two synthetic tasks generated with a fixed seed
(LongMemEval_S and SciFact: benchmarks.longmemeval, benchmarks.scifact).

A task is a corpus of records (text + citation key + date) and queries whose relevant answer is
any record with one of the query's evidence keys.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
LOCOMO_HELP = (
    "LoCoMo data not found at {path}. Pass --locomo PATH, or get data/locomo10.json from the "
    "public repository snap-research/LoCoMo (CC BY-NC 4.0; cite Maharana et al., ACL 2024)."
)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA_ID = re.compile(r"D\d+:\d+")


@dataclass
class Doc:
    key: str
    text: str
    session: str | None
    created_at: datetime | None = None
    role: str | None = None


@dataclass
class Query:
    qid: str
    text: str
    evidence: set[str]
    category: str = "all"
    sessions: set[str] = field(default_factory=set)  # the sessions that hold the evidence, where known
    asked_at: datetime | None = None  # when the question was asked, where the data says


@dataclass
class Task:
    name: str
    tier: str  # "recall" or "archival"
    docs: list[Doc]
    queries: list[Query]
    meta: dict[str, str] = field(default_factory=dict)


def parse_locomo_date(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> aware datetime (UTC; LoCoMo gives no zone)."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], datetime | None]]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    return [
        (n, conversation[f"session_{n}"], parse_locomo_date(conversation.get(f"session_{n}_date_time", "")))
        for n in numbers
    ]


def first_sessions(sample: dict[str, Any], sessions: int, questions: int | None = None) -> dict[str, Any]:
    """The sample with only its first `sessions` sessions (and their observations) and, if given,
    its first `questions` questions: a smoke-run size. Questions about later sessions stay and simply miss."""
    conversation = {
        key: value
        for key, value in sample["conversation"].items()
        if not (m := re.match(r"session_(\d+)", key)) or int(m.group(1)) <= sessions
    }
    observation = {
        key: value
        for key, value in sample.get("observation", {}).items()
        if int(re.findall(r"\d+", key)[0]) <= sessions
    }
    return {**sample, "conversation": conversation, "observation": observation, "qa": sample["qa"][:questions]}


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares an image: {turn['blip_caption']}]"
    return text


def _queries(sample: dict[str, Any]) -> list[Query]:
    queries = []
    for i, qa in enumerate(sample["qa"]):
        evidence = {e for item in qa.get("evidence", []) for e in _DIA_ID.findall(str(item))}
        if evidence:
            queries.append(
                Query(
                    f"{sample['sample_id']}/{i}", qa["question"], evidence, CATEGORIES.get(qa.get("category"), "other")
                )
            )
    return queries


def load_locomo(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise FileNotFoundError(LOCOMO_HELP.format(path=path))
    data: list[dict[str, Any]] = json.loads(path.read_text())
    return data


def locomo_recall_task(sample: dict[str, Any]) -> Task:
    docs = [
        Doc(turn["dia_id"], _turn_text(turn), str(n), when, turn["speaker"])
        for n, turns, when in _sessions(sample["conversation"])
        for turn in turns
    ]
    return Task(f"locomo-recall/{sample['sample_id']}", "recall", docs, _queries(sample))


def locomo_archival_task(sample: dict[str, Any]) -> Task:
    dates = {n: when for n, _, when in _sessions(sample["conversation"])}
    docs = []
    for key, by_speaker in sample.get("observation", {}).items():
        n = int(re.findall(r"\d+", key)[0])
        for speaker, facts in by_speaker.items():
            for fact, dia in facts:
                for dia_id in _DIA_ID.findall(str(dia))[:1]:
                    docs.append(Doc(dia_id, fact, str(n), dates.get(n), speaker))
    return Task(f"locomo-archival/{sample['sample_id']}", "archival", docs, _queries(sample))


# -- synthetic ----------------------------------------------------------------------------------
def key_value_task(n: int = 1000, seed: int = 13) -> Task:
    """MemGPT-style key-value retrieval: the exact rare token (a 7-digit key) decides. The keys share
    most of their digits, so an embedding sees near-identical records; only exact matching tells them apart."""
    rng = random.Random(seed)
    keys = rng.sample(range(4_300_000, 4_400_000), n)
    docs = [
        Doc(f"kv{i}", f"The locker code for parcel {key} is {rng.randrange(1000, 9999)}.", None)
        for i, key in enumerate(keys)
    ]
    queries = [
        Query(f"kv{i}", f"What is the locker code for parcel {key}?", {f"kv{i}"}, "key-value")
        for i, key in enumerate(keys)
        if i % 4 == 0
    ]
    return Task("synthetic/key-value", "archival", docs, queries)


# (document wording, query wording): the two sides share no content word
_VERBS = [
    ("bought", "purchased"),
    ("repaired", "fixed up"),
    ("sold", "got rid of by selling"),
    ("painted", "gave a new coat of colour to"),
    ("lost", "misplaced"),
    ("borrowed", "took on loan"),
    ("cleaned", "scrubbed"),
    ("photographed", "took pictures of"),
    ("insured", "took out cover for"),
    ("returned", "brought back"),
]
_OBJECTS = [
    ("car", "automobile"),
    ("couch", "sofa"),
    ("bicycle", "bike"),
    ("laptop", "notebook computer"),
    ("jacket", "coat"),
    ("television", "TV set"),
    ("refrigerator", "fridge"),
    ("boat", "vessel"),
    ("guitar", "six-string instrument"),
    ("house", "home"),
]
_TIMES = [
    ("yesterday", "the previous day"),
    ("last week", "seven days ago"),
    ("in January", "at the start of the year"),
    ("this morning", "earlier today"),
    ("on the weekend", "on Saturday or Sunday"),
]
_PEOPLE = ["Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan", "Kendall", "Logan"]


def paraphrase_task(seed: int = 13) -> Task:
    """Facts and questions worded differently: meaning decides, shared words do not."""
    rng = random.Random(seed)
    combos = [(v, o, t) for v in _VERBS for o in _OBJECTS for t in _TIMES]
    rng.shuffle(combos)
    docs, queries = [], []
    for i, ((verb, verb_q), (obj, obj_q), (when, when_q)) in enumerate(combos):
        docs.append(Doc(f"p{i}", f"{rng.choice(_PEOPLE)} {verb} the {obj} {when}.", None))
        if i % 2 == 0:
            queries.append(Query(f"p{i}", f"Who {verb_q} the {obj_q} {when_q}?", {f"p{i}"}, "paraphrase"))
    return Task("synthetic/paraphrase", "archival", docs, queries)
