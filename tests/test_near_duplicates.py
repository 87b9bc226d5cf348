"""Near-duplicates (#23 item 3): an archival insert that repeats a current passage (close embedding and
near-identical words) returns that passage with `duplicate_of` and merges its tags and citation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memvec import Memory, NewRecord, Tier
from memvec.config import DedupSettings
from memvec.embed import Embedder
from memvec.index.duplicates import near_identical
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from memvec.tools import TOOLS, ToolContext
from tests.conftest import CLEAN_VERIFY, run_cli

SAME = [
    ("Ana lives in Lisbon.", "ana lives in lisbon"),
    ("Ana lives in Lisbon.", "Ana also lives in Lisbon!"),
    ("Melanie is currently managing kids and work.", "Melanie is currnetly managing kids and work."),
    ("Gina lost her job at Door Dash.", "Gina lost her job at the Door Dash"),
    ("Ana’s cat is called Miso.", "Ana's cat is called Miso."),
]
DIFFERENT = [
    ("Ana lives in Lisbon.", "Ana lives in Berlin."),  # a changed value
    ("The meeting is at 9 am.", "The meeting is at 10 am."),  # a number
    ("Ana likes jazz.", "Ana doesn't like jazz."),  # a negation
    ("Jon is determined not to give up.", "Jon is not determined not to give up."),  # one more negation
    ("Ana pays Bo.", "Bo pays Ana."),  # roles swapped: same words, other order
    ("Ana has a cat.", "Ana has a bat."),  # short words: another word, not a typo
    ("Ana moved to Oslo in 2019.", "Ana moved to Oslo in 2021."),
    ("Ana sings.", "Ana sings opera."),  # a word added
    ("Parcel tok9x2 is here.", "Parcel tok3x2 is here."),  # a code one character apart is not a typo
]


@pytest.mark.parametrize(("old", "new"), SAME)
def test_the_lexical_check_accepts_repeats(old: str, new: str) -> None:
    assert near_identical(new, old) and near_identical(old, new)


@pytest.mark.parametrize(("old", "new"), DIFFERENT)
def test_the_lexical_check_keeps_changed_facts_apart(old: str, new: str) -> None:
    assert not near_identical(new, old) and not near_identical(old, new)


def test_new_words_tolerates_that_many_but_never_a_number() -> None:
    assert near_identical("Ana sings opera.", "Ana sings.", new_words=1)
    assert not near_identical("Ana sings opera loudly.", "Ana sings.", new_words=1)
    assert not near_identical("Ana sings at 9.", "Ana sings.", new_words=5)


def test_a_repeat_merges_into_the_passage_and_a_change_does_not(real_memory: Memory) -> None:
    archival = real_memory.archival("ana")
    first = archival.insert("Ana's sister Maya lives in Porto.", tags=["family"]).record
    repeat = archival.insert(
        "ana's sister maya also lives in porto", tags=["porto"], source_url="https://chat.example/12", session_id="s9"
    )
    assert (repeat.created, repeat.duplicate_of, repeat.record.id) == (False, first.id, first.id)
    assert repeat.record.tags == ["family", "porto"]
    assert repeat.record.citation.model_dump() == {
        "session_id": "s9",
        "turn_id": None,
        "source_url": "https://chat.example/12",
        "document": None,
    }
    again = archival.insert("Ana's sister Maya lives in Porto!", source_url="https://other.example")
    assert again.duplicate_of == first.id and again.record.citation.source_url == "https://chat.example/12"
    changed = archival.insert("Ana's sister Maya lives in Braga.")
    assert changed.created and changed.duplicate_of is None
    assert archival.count() == 2 and [r.id for r in archival.list(limit=10)] == [first.id, changed.record.id]
    assert [h.id for h in archival.search("Maya", tags=["porto"])] == [first.id]  # the merged tag filters


def test_repeats_within_one_batch_and_exact_ones(real_memory: Memory) -> None:
    texts = [
        "Bo's birthday is in May.",
        "bo's birthday is in may",
        "Bo's birhtday is in May.",
        "Bo's birthday is in June.",
    ]
    results = real_memory.insert(
        [NewRecord(agent="bo", tier=Tier.ARCHIVAL, text=t, tags=[f"t{n}"]) for n, t in enumerate(texts)]
    )
    first = results[0].record.id
    assert [(r.created, r.duplicate_of) for r in results] == [
        (True, None),
        (False, first),
        (False, first),
        (True, None),
    ]
    assert results[1].record.tags == ["t0", "t1", "t2"]
    exact = real_memory.archival("bo").insert("Bo's birthday is in May.", tags=["t9"])
    assert exact.duplicate_of == first and exact.record.tags == ["t0", "t1", "t2", "t9"]
    assert real_memory.verify().model_dump() == CLEAN_VERIFY


def test_only_current_versions_and_only_archival_passages_absorb_repeats(real_memory: Memory) -> None:
    archival = real_memory.archival("cy")
    old = archival.insert("Cy works at Acme.").record
    archival.update(old.id, "Cy works at Initech.")
    back = archival.insert("cy works at acme")  # repeats a closed version: a fact stated again
    assert back.created and back.duplicate_of is None
    recall = real_memory.recall("cy")
    said = [
        recall.append("user", text, session_id="s1", turn_id=n).created
        for n, text in enumerate(["I work at Acme.", "i work at acme"])
    ]
    assert said == [True, True]  # messages are a log: each one is kept


def test_turned_off_only_exact_repeats_merge(tmp_path: Path, minilm_int8: Embedder) -> None:
    with Memory.open(tmp_path / "home", embedder=minilm_int8, dedup=DedupSettings(near_cosine=None)) as mem:
        archival = mem.archival("ana")
        archival.insert("Ana lives in Lisbon.")
        assert archival.insert("ana lives in lisbon").created
        assert not archival.insert("Ana lives in Lisbon.").created


@pytest.mark.slow
def test_a_repeat_over_http_the_tool_and_the_cli(memory: Memory, tmp_path: Path) -> None:
    client = TestClient(create_app(memory, KeyRing.parse([("t", "admin-key-0123456789")])))
    headers = {"Authorization": "Bearer admin-key-0123456789"}
    assert client.post("/v1/agents", json={"name": "ana"}, headers=headers).status_code == 201
    base = "/v1/agents/ana/archival-memory"
    made = client.post(base, json={"text": "Ana's locker is number 41."}, headers=headers)
    repeat = client.post(base, json={"text": "ana's locker is number 41", "tags": ["gym"]}, headers=headers)
    assert made.status_code == 201 and repeat.status_code == 200
    assert repeat.json()[0]["duplicate_of"] == made.json()[0]["id"] == repeat.json()[0]["id"]
    assert repeat.json()[0]["tags"] == ["gym"] and repeat.json()[0]["created"] is False

    ctx = ToolContext(memory=memory, agent="ana")
    tool = TOOLS["archival_memory_insert"]
    saved = json.loads(tool.run(ctx, tool.arguments.model_validate({"content": "Ana's locker is number 41!"})))
    assert saved["duplicate"] is True and saved["duplicate_of"] == int(made.json()[0]["id"])

    home = tmp_path / "cli-home"
    run_cli(
        "--model", "hash:64", "add", "Ana's locker is number 41.", "--agent", "ana", "--tier", "archival", home=home
    )
    out = run_cli(
        "--model", "hash:64", "add", "ana's locker is number 41", "--agent", "ana", "--tier", "archival", home=home
    ).stdout
    assert out.strip() == "duplicate of record 1"
