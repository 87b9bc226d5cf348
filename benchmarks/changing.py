"""Synthetic "changing facts": people whose city, employer, car and hobby change several times over a
timeline, asked for the current value and for the value at a past date.

Two ways to keep them, same model and same default hybrid search:
- **versioned**: the first value is inserted, every change is an `update` with `valid_from` at the
  change date; current questions search the current versions, past ones pass `as_of` the date;
- **append-only**: every value is its own passage recorded at its change date (what memvec did before
  versions; the date is indexed as words, so "in March 2019" can still match a record's date).

Scored by R@1 of the right version, R@5, and how often a current question's top 5 also holds an
outdated value of the same fact (a contradiction the agent reads).
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import mean
from typing import Any

from memvec import Memory, NewRecord, Tier
from memvec.embed import Embedder

PEOPLE = [
    "Avery",
    "Blake",
    "Casey",
    "Devon",
    "Emery",
    "Finley",
    "Harper",
    "Jordan",
    "Kendall",
    "Logan",
    "Morgan",
    "Noel",
    "Parker",
    "Quinn",
    "Reese",
    "Rowan",
    "Sage",
    "Skyler",
    "Tatum",
    "Wren",
]
# attribute: (statement, question, values)
ATTRIBUTES: dict[str, tuple[str, str, list[str]]] = {
    "city": (
        "{person} lives in {value}.",
        "Where does {person} live",
        ["Lisbon", "Berlin", "Oslo", "Toronto", "Nairobi", "Osaka", "Denver", "Porto", "Krakow", "Austin"],
    ),
    "employer": (
        "{person} works at {value}.",
        "Where does {person} work",
        [
            "Acme Robotics",
            "Blue Harbor Bank",
            "Cobalt Studios",
            "Delta Freight",
            "Evergreen Clinic",
            "Foxglove Labs",
            "Granite Insurance",
            "Helios Energy",
        ],
    ),
    "car": (
        "{person} drives a {value}.",
        "What car does {person} drive",
        ["red Volvo", "blue Toyota", "green Jeep", "silver Tesla", "white Honda", "black Ford", "grey Subaru"],
    ),
    "hobby": (
        "{person}'s hobby is {value}.",
        "What is {person}'s hobby",
        ["rock climbing", "pottery", "chess", "sailing", "birdwatching", "woodworking", "salsa dancing"],
    ),
}
START, END = datetime(2012, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Version:
    key: str  # person/attribute/index
    text: str
    since: datetime


@dataclass(frozen=True)
class Question:
    text: str
    answer: str  # the key of the right version
    fact: str  # person/attribute: every version of it
    as_of: datetime | None  # None: the current value


def timeline(seed: int = 7, people: int = len(PEOPLE)) -> tuple[list[list[Version]], list[Question]]:
    """Every fact's versions (3 to 5, oldest first) and two questions per fact: now, and a past date."""
    rng = random.Random(seed)
    facts, questions = [], []
    for person in PEOPLE[:people]:
        for attribute, (statement, question, values) in ATTRIBUTES.items():
            count = rng.randint(3, 5)
            days = sorted(rng.sample(range(1, (END - START).days), count - 1))
            starts = [START, *(START + timedelta(days=d) for d in days)]
            chosen = rng.sample(values, count)
            fact = f"{person}/{attribute}"
            versions = [
                Version(f"{fact}/{i}", statement.format(person=person, value=value), since)
                for i, (value, since) in enumerate(zip(chosen, starts, strict=True))
            ]
            facts.append(versions)
            questions.append(Question(f"{question.format(person=person)} now?", versions[-1].key, fact, None))
            past = rng.randrange(count - 1)
            until = versions[past + 1].since
            when = versions[past].since + (until - versions[past].since) * rng.uniform(0.2, 0.8)
            questions.append(
                Question(f"{question.format(person=person)} in {when:%B %Y}?", versions[past].key, fact, when)
            )
    return facts, questions


def _load(mem: Memory, facts: list[list[Version]], *, versioned: bool) -> dict[int, str]:
    """Insert every version; returns record id -> version key."""
    keys: dict[int, str] = {}
    archival = mem.archival("facts")
    for versions in facts:
        previous = None
        for version in versions:
            if versioned and previous is not None:
                record = archival.update(previous, version.text, valid_from=version.since).record
            else:
                record = mem.insert(
                    [
                        NewRecord(
                            agent="facts",
                            tier=Tier.ARCHIVAL,
                            text=version.text,
                            created_at=version.since,
                            valid_from=version.since,
                        )
                    ]
                )[0].record
            keys[record.id] = version.key
            previous = record.id
    return keys


def _score(mem: Memory, keys: dict[int, str], questions: list[Question], *, versioned: bool) -> dict[str, Any]:
    rows: dict[str, list[tuple[float, float, float]]] = {"current": [], "past": []}
    for question in questions:
        as_of = question.as_of if versioned else None
        ranked = [keys[h.id] for h in mem.archival("facts").search(question.text, k=5, as_of=as_of)]
        same_fact = [k for k in ranked if k.rsplit("/", 1)[0] == question.fact]
        stale = float(any(k != question.answer for k in same_fact))
        kind = "current" if question.as_of is None else "past"
        rows[kind].append((float(ranked[:1] == [question.answer]), float(question.answer in ranked), stale))
    return {
        kind: {
            "n": len(r),
            "recall@1": mean(x[0] for x in r),
            "recall@5": mean(x[1] for x in r),
            "outdated_in_top5": mean(x[2] for x in r),
        }
        for kind, r in rows.items()
    }


def run(embedder: Embedder, people: int = len(PEOPLE), seed: int = 7) -> dict[str, Any]:
    """Both ways of keeping the facts, scored on the same questions."""
    facts, questions = timeline(seed, people)
    out: dict[str, Any] = {"facts": len(facts), "versions": sum(len(v) for v in facts)}
    for name, versioned in (("versioned", True), ("append-only", False)):
        with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "home", embedder=embedder) as mem:
            keys = _load(mem, facts, versioned=versioned)
            out[name] = _score(mem, keys, questions, versioned=versioned)
    return out
