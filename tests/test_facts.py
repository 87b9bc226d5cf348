"""The ranker's per-record facts (memvec.index.facts) are what the store's text and role say, for
every record the index holds and for none it does not: through inserts, deletes, another process's
writes caught up from the change log, a reload from disk and a rebuild."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memvec import Memory, NewRecord, Tier
from memvec.embed import HashingEmbedder
from memvec.index.facts import Facts, RecordFacts, text_flags

TEXTS = [
    "We went hiking last weekend?",
    "Is that the blue one? I think so.",
    "I adopted a dog in 2021",
    "plain words only",
    "Ok.",
    "What about tomorrow ?  ",
]


def expected(roles: list[str | None], texts: list[str]) -> list[tuple[str | None, int, bool, bool, bool]]:
    return [
        (role, len(text), bool(text_flags(text) & 1), text.rstrip().endswith("?"), "?" in text)
        for role, text in zip(roles, texts, strict=True)
    ]


def read(facts: RecordFacts, ids: list[int]) -> list[tuple[str | None, int, bool, bool, bool]]:
    return rows_of(facts.of(np.array(ids, dtype=np.int64)))


def rows_of(found: Facts) -> list[tuple[str | None, int, bool, bool, bool]]:
    return list(
        zip(
            found.roles,
            found.lengths.tolist(),
            found.time_words.tolist(),
            found.ends_question.tolist(),
            found.has_question.tolist(),
            strict=True,
        )
    )


@given(
    st.lists(
        st.tuples(st.sampled_from([None, "user", "assistant", "Ana"]), st.text(max_size=300)),
        unique_by=lambda row: row[1],
        max_size=40,
    ),
    st.sets(st.integers(0, 39)),
)
def test_facts_read_back_what_was_added_and_nothing_removed(rows: list[tuple[str | None, str]], gone: set[int]) -> None:
    roles, texts = [role for role, _ in rows], [text for _, text in rows]
    ids = list(range(1, len(rows) + 1))
    facts = RecordFacts()
    facts.add(np.array(ids, dtype=np.int64), roles, texts)
    removed = [i for i in ids if i - 1 in gone]
    facts.remove(np.array(removed, dtype=np.int64))
    blank = (None, 0, False, False, False)
    want = [blank if i in removed else row for i, row in zip(ids, expected(roles, texts), strict=True)]
    assert read(facts, [*ids, -1, 10_000]) == [*want, blank, blank]


def test_a_long_text_and_many_roles_survive_a_save(tmp_path: Path) -> None:
    facts = RecordFacts()
    roles: list[str | None] = [f"speaker-{n}" for n in range(300)]
    texts = ["x? 2020 " * (n * 1000) for n in range(300)]
    facts.add(np.arange(300, dtype=np.int64), roles, texts)
    facts.save(tmp_path / "facts.npz")
    assert read(RecordFacts.load(tmp_path / "facts.npz"), list(range(300))) == expected(roles, texts)


def store_facts(mem: Memory, ids: list[int]) -> list[tuple[str | None, int, bool, bool, bool]]:
    records = [mem.recall("ana").get(i) for i in ids]
    return expected([r.role for r in records], [r.text for r in records])


def test_the_index_holds_the_store_facts_through_writes_reloads_and_rebuilds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        recall = mem.recall("ana")
        kept = [recall.append(("user", "assistant")[n % 2], text).record.id for n, text in enumerate(TEXTS)]
        deleted = kept.pop(1)
        recall.delete(deleted)
        with Memory.open(home, embedder=HashingEmbedder(32)) as other:  # another process's writes
            added = other.insert(
                [NewRecord(agent="ana", tier=Tier.RECALL, text="Did you call on Monday?", role="Ana")]
            )[0].record.id
        recall.search("monday", k=3)  # catches up from the change log
        facts = mem._engine.tier_index("ana", Tier.RECALL).facts
        assert read(facts, [*kept, added]) == store_facts(mem, [*kept, added])
        assert read(facts, [deleted]) == [(None, 0, False, False, False)]
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        assert read(mem._engine.tier_index("ana", Tier.RECALL).facts, [*kept, added]) == store_facts(
            mem, [*kept, added]
        )
        # a loaded index holding a fact the store does not: rebuilt in place, it derives all from the store
        index = mem._engine.tier_index("ana", Tier.RECALL)
        index.facts.add(np.array([deleted], dtype=np.int64), ["Ana"], ["Did you call?"])
        index.rebuild()
        mem.rebuild()
        for facts in (index.facts, mem._engine.tier_index("ana", Tier.RECALL).facts):
            assert read(facts, [*kept, added, deleted]) == [
                *store_facts(mem, [*kept, added]),
                (None, 0, False, False, False),
            ]


def test_the_first_rows_and_the_rest_split_what_was_read() -> None:
    facts = RecordFacts()
    facts.add(np.arange(1, 7, dtype=np.int64), ["user", None, "Ana", "user", None, "Ana"], TEXTS)
    whole = read(facts, [3, 1, 6, 2, 5])
    found = facts.of(np.array([3, 1, 6, 2, 5], dtype=np.int64))
    split = [found.first(2), found.after(2)]
    rows = rows_of(split[0]) + rows_of(split[1])
    assert rows == whole and len(split[0].roles) == 2
