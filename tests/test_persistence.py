"""The store is the truth: index files are checked on load and rebuilt when they disagree."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memvec import Memory, ModelMismatchError, NewRecord, Tier
from memvec.embed import HashingEmbedder
from memvec.index.files import FACTS_FILE, LEXICAL_FILE, MANIFEST_FILE, SESSIONS_FILE, VECTOR_FILE, read_manifest
from tests.conftest import CLEAN_VERIFY


def fill(home: Path, n: int = 40, dim: int = 64) -> list[int]:
    with Memory.open(home, embedder=HashingEmbedder(dim)) as mem:
        return [mem.archival("app").insert(f"note {i} about topic {i % 7}").record.id for i in range(n)]


def index_dir(home: Path) -> Path:
    return home / "index" / "app" / "archival"


def reopen_and_search(home: Path, dim: int = 64) -> tuple[Memory, list[int]]:
    mem = Memory.open(home, embedder=HashingEmbedder(dim))
    hits = mem.archival("app").search("topic 3", k=100, mode="bm25")
    return mem, [h.id for h in hits]


def test_index_is_saved_with_a_manifest(home: Path) -> None:
    ids = fill(home)
    manifest = read_manifest(index_dir(home))
    assert (manifest.model_id, manifest.dim, manifest.record_count) == ("hash:64", 64, len(ids))
    assert manifest.last_change == len(ids)
    assert set(manifest.checksums) == {VECTOR_FILE, LEXICAL_FILE, SESSIONS_FILE, FACTS_FILE}
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        assert mem.verify().model_dump() == CLEAN_VERIFY


@pytest.mark.parametrize(
    "damage",
    [
        "delete-vector",
        "delete-lexical",
        "corrupt-vector",
        "corrupt-lexical",
        "delete-sessions",
        "corrupt-sessions",
        "delete-facts",
        "corrupt-facts",
        "delete-manifest",
        "garbage-manifest",
    ],
)
def test_missing_or_corrupt_files_are_rebuilt_never_trusted(home: Path, damage: str) -> None:
    fill(home)
    _, expected = reopen_and_search(home)
    action, which = damage.split("-")
    path = (
        index_dir(home)
        / {
            "vector": VECTOR_FILE,
            "lexical": LEXICAL_FILE,
            "sessions": SESSIONS_FILE,
            "facts": FACTS_FILE,
            "manifest": MANIFEST_FILE,
        }[which]
    )
    if action == "delete":
        path.unlink()
    elif action == "corrupt":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        path.write_text("{not json")
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        problems = mem.verify().problems  # verify reads what is on disk before anything repairs it
    assert problems and problems[0].tier is Tier.ARCHIVAL
    mem, found = reopen_and_search(home)
    report = mem._engine.load_reports[("app", Tier.ARCHIVAL)]
    assert report.rebuilt and report.reembedded == 0
    assert found == expected
    assert mem.verify().model_dump() == CLEAN_VERIFY
    mem.close()


def test_index_behind_the_store_catches_up_from_the_change_log(home: Path) -> None:
    fill(home, 10)
    names = (VECTOR_FILE, LEXICAL_FILE, SESSIONS_FILE, FACTS_FILE, MANIFEST_FILE)
    before = {name: (index_dir(home) / name).read_bytes() for name in names}
    fill(home, 15)  # 5 new notes; the first 10 are duplicates
    for name, data in before.items():  # put back the old, consistent files: as if the process died before saving
        (index_dir(home) / name).write_bytes(data)
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        report = mem.verify()
    assert report.ok and [(b.agent, b.tier, b.changes) for b in report.behind] == [("app", Tier.ARCHIVAL, 5)]
    mem, _ = reopen_and_search(home)
    loaded = mem._engine.load_reports[("app", Tier.ARCHIVAL)]
    assert not loaded.rebuilt and loaded.changes_applied == 5
    assert mem.verify().model_dump() == CLEAN_VERIFY
    mem.close()


def test_opening_with_another_model_is_refused(home: Path) -> None:
    fill(home)
    with pytest.raises(ModelMismatchError, match="memvec rebuild --model hash:32"):
        Memory.open(home, model="hash:32")


def test_model_change_re_embeds_and_rebuilds(home: Path) -> None:
    ids = fill(home)
    with Memory.open(home) as mem:
        assert mem.model_id == "hash:64"
        reports = mem.rebuild(model="hash:32")
        assert [(r.records, r.reembedded) for r in reports] == [(len(ids), len(ids))]
        assert mem.verify().model_dump() == CLEAN_VERIFY
    manifest = read_manifest(index_dir(home))
    assert (manifest.model_id, manifest.dim) == ("hash:32", 32)
    with Memory.open(home) as mem:
        assert mem.model_id == "hash:32"
        batch = next(mem._store.embeddings("app", Tier.ARCHIVAL))
        assert set(batch.models) == {"hash:32"} and batch.vectors.shape[1] == 32
        expected = HashingEmbedder(32).embed_documents(batch.texts)
        np.testing.assert_allclose(batch.vectors, expected, rtol=1e-6)
        assert mem.archival("app").search("note 5", k=1, mode="vector")[0].text.startswith("note 5 ")


def test_index_built_with_another_model_is_rebuilt_on_load(home: Path) -> None:
    ids = fill(home)
    # simulate a rebuild to another model that crashed after writing the index, before the home switched
    with Memory.open(home) as mem:
        from memvec.engine.partition_index import PartitionIndex

        PartitionIndex(
            "app",
            Tier.ARCHIVAL,
            store=mem._store,
            embedder=HashingEmbedder(16),
            directory=index_dir(home),
            settings=mem.index_settings,
        ).rebuild()
    mem, found = reopen_and_search(home)
    report = mem._engine.load_reports[("app", Tier.ARCHIVAL)]
    assert report.rebuilt and "model_id" in report.reason and report.reembedded == 40
    assert set(found) == set(ids) and set(found[:6]) == {ids[i] for i in range(40) if i % 7 == 3}
    assert mem.verify().model_dump() == CLEAN_VERIFY
    mem.close()


def test_rebuild_without_model_change_does_not_re_embed(home: Path) -> None:
    fill(home)
    with Memory.open(home) as mem:
        reports = mem.rebuild(agent="app")
        assert [r.reembedded for r in reports] == [0]


@pytest.mark.parametrize("kind", ["hnsw", "flat-fp16", "hnsw-fp16"])
def test_switching_index_kind_rebuilds(home: Path, kind: str) -> None:
    fill(home)
    with Memory.open(home, index={"kind": kind}) as mem:
        assert mem.archival("app").search("note 3", k=1, mode="vector")[0].text.startswith("note 3 ")
        filtered = mem.archival("app").search("note 3", k=1, mode="vector", start=datetime(2000, 1, 1, tzinfo=UTC))
        assert filtered[0].text.startswith("note 3 ")  # the exact path over the allowed ids decodes fp16 too
    assert read_manifest(index_dir(home)).index_kind == kind
    with Memory.open(home) as mem:  # the home remembers the kind
        assert mem.index_settings.kind == kind
        assert mem.verify().model_dump() == CLEAN_VERIFY
        mem.archival("app").delete(mem.archival("app").search("note 5", k=1, mode="bm25")[0].id)
        assert not [h for h in mem.archival("app").search("note 5", k=3, mode="vector") if h.text.startswith("note 5 ")]


def test_a_big_index_waits_for_an_eighth_of_its_size_before_saving_again(tmp_path: Path) -> None:
    """A save rewrites the whole index: past save_every x 8 records the changes between saves grow
    with the tier, so saving stays O(1) per change."""
    with Memory.open(tmp_path, embedder=HashingEmbedder(16), index={"save_every": 10}) as mem:
        archival = mem.archival("ana")
        mem.insert([NewRecord(agent="ana", tier="archival", text=f"note {i}") for i in range(400)])
        index = mem._engine.tier_index("ana", archival.tier)
        assert index.unsaved == 0
        for i in range(56):  # 56 unsaved < 456 // 8 = 57
            archival.insert(f"later note {i}")
        assert index.unsaved == 56
        archival.insert("the 57th")  # 57 >= 457 // 8
        assert index.unsaved == 0
