"""The ONNX Runtime backend through the real path: the packaged MiniLM exported, quantized and run,
checked against the torch backend on real conversation text; backend ids, homes and rebuilds."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memvec import Memory
from memvec.embed import Embedder, backend_of, load_embedder, onnx_export, qualified_model_id
from memvec.embed.locate import packaged_minilm_path
from memvec.embed.onnx import pool
from memvec.embed.onnx_export import exported_model
from memvec.embed.st_layout import read_layout
from memvec.errors import InvalidInputError, ModelExportError, ModelMismatchError, QuantizationRefusedError
from tests.conftest import CLEAN_VERIFY, LOCOMO, run_cli

pytestmark = pytest.mark.slow


def locomo_turns(limit: int = 400) -> list[str]:
    data = json.loads(LOCOMO.read_text())
    turns = [
        f"{t['speaker']}: {t['text']}"
        for conv in data
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]
    return turns[:limit]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


@pytest.fixture(scope="module")
def reference(minilm: Embedder) -> np.ndarray:
    return minilm.embed_documents(locomo_turns())


def test_int8_vectors_stay_close_to_torch_on_real_turns(minilm_int8: Embedder, reference: np.ndarray) -> None:
    vectors = minilm_int8.embed_documents(locomo_turns())
    assert minilm_int8.model_id == "onnx-int8:all-MiniLM-L6-v2" and vectors.shape == reference.shape
    similarity = cosines(vectors, reference)
    assert similarity.mean() >= 0.99 and similarity.min() >= 0.9
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_fp32_onnx_matches_torch(reference: np.ndarray) -> None:
    fp32 = load_embedder("onnx:all-MiniLM-L6-v2")
    similarity = cosines(fp32.embed_documents(locomo_turns()), reference)
    assert similarity.min() >= 0.9999
    query = "When did Caroline go to the support group?"
    torch_query = load_embedder("all-MiniLM-L6-v2").embed_query(query)
    assert float(fp32.embed_query(query) @ torch_query) >= 0.9999


def test_batching_and_length_sorting_do_not_change_fp32_vectors() -> None:
    fp32 = load_embedder("onnx:all-MiniLM-L6-v2")
    texts = locomo_turns(40)[::-1]
    together = fp32.embed_documents(texts)
    alone = np.stack([fp32.embed_documents([t])[0] for t in texts])
    assert cosines(together, alone).min() >= 0.99999


def test_the_packaged_layout_is_read_not_assumed() -> None:
    layout = read_layout(packaged_minilm_path())
    assert (layout.pooling, layout.max_seq_length, layout.dim) == (["mean"], 256, 384)


def test_long_texts_are_truncated_at_the_max_sequence_length(minilm_int8: Embedder) -> None:
    long = " ".join(["memory"] * 2000)
    assert minilm_int8.embed_documents([long, "short"]).shape == (2, 384)


def test_pooling_modes_against_a_reference() -> None:
    rng = np.random.default_rng(3)
    hidden = rng.normal(size=(2, 4, 3)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]])
    got = pool(hidden, mask, ["cls", "max", "mean", "mean_sqrt_len", "weightedmean", "lasttoken"])
    for row, length in enumerate((3, 2)):
        tokens = hidden[row, :length]
        weights = np.arange(1, length + 1)[:, None]
        expected = np.concatenate(
            [
                tokens[0],
                tokens.max(0),
                tokens.mean(0),
                tokens.sum(0) / np.sqrt(length),
                (tokens * weights).sum(0) / weights.sum(),
                tokens[-1],
            ]
        )
        assert np.allclose(got[row], expected, atol=1e-6)


def test_a_directory_that_is_not_a_model_is_refused_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MEMVEC_CACHE", str(cache))
    not_a_model = tmp_path / "notes"
    not_a_model.mkdir()
    (not_a_model / "notes.txt").write_text("hello")
    with pytest.raises(ModelExportError, match=r"no config\.json"):
        exported_model(not_a_model, "int8")
    assert not cache.exists()


def test_an_export_that_fails_midway_leaves_no_model_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MEMVEC_CACHE", str(cache))
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in (
        "config.json",
        "modules.json",
        "sentence_bert_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "special_tokens_map.json",
    ):
        (broken / name).write_bytes((packaged_minilm_path() / name).read_bytes())
    (broken / "1_Pooling").mkdir()
    (broken / "1_Pooling" / "config.json").write_bytes((packaged_minilm_path() / "1_Pooling/config.json").read_bytes())
    (broken / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(ModelExportError, match="cannot"):
        exported_model(broken, "int8")
    assert list((cache / "onnx").iterdir()) == []  # no complete export, no scratch folder


def test_an_int8_graph_that_disagrees_with_fp32_is_refused_once_and_the_home_embeds_in_fp32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MEMVEC_CACHE", str(cache))
    monkeypatch.setattr(onnx_export, "_INT8_CHECK", 1.01)  # no int8 graph agrees that well: MiniLM stands in
    with pytest.raises(QuantizationRefusedError, match="quantizes badly"):
        exported_model(packaged_minilm_path(), "int8")
    assert f"first use of {packaged_minilm_path()} on ONNX Runtime (int8): exporting and checking" in caplog.text
    names = [p.name for p in (cache / "onnx").iterdir()]
    assert any(n.endswith(onnx_export.REFUSED_FILE) for n in names) and not any(n.endswith("-int8") for n in names)
    exports: list[tuple[object, ...]] = []
    monkeypatch.setattr(onnx_export, "_export", lambda *args: exports.append(args))
    with pytest.raises(QuantizationRefusedError):  # remembered: not exported again
        exported_model(packaged_minilm_path(), "int8")
    monkeypatch.undo()
    monkeypatch.setenv("MEMVEC_CACHE", str(cache))
    embedder = load_embedder("onnx-int8:all-MiniLM-L6-v2")
    assert embedder.model_id == "onnx:all-MiniLM-L6-v2" and "quantizes badly" in caplog.text
    assert not exports
    with Memory.open(tmp_path / "home", embedder=embedder) as memory:
        assert memory.model_id == "onnx:all-MiniLM-L6-v2" and memory._engine.ranker is not None


def test_two_processes_starting_at_once_export_the_model_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm_int8: Embedder
) -> None:
    _, spec = exported_model(packaged_minilm_path(), "int8")  # the real export, from the user's cache
    monkeypatch.setenv("MEMVEC_CACHE", str(tmp_path / "cache"))
    exports: list[Path] = []
    waiting: list[threading.Thread] = []

    def export(model_dir: Path, layout: object, out: Path, *rest: object) -> None:
        exports.append(out)
        if len(exports) == 1:  # a second start arrives while the first is exporting, and must wait for it
            waiting.append(threading.Thread(target=exported_model, args=(packaged_minilm_path(), "int8")))
            waiting[0].start()
            waiting[0].join(timeout=0.5)
        (out / onnx_export.SPEC_FILE).write_text(spec.model_dump_json())

    monkeypatch.setattr(onnx_export, "_export", export)
    assert exported_model(packaged_minilm_path(), "int8")[1] == spec
    waiting[0].join(timeout=30)
    assert not waiting[0].is_alive() and len(exports) == 1, exports


def test_unsupported_modules_are_refused(tmp_path: Path) -> None:
    model = tmp_path / "dense"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "modules.json").write_text(
        json.dumps(
            [
                {"path": "", "type": "sentence_transformers.models.Transformer"},
                {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            ]
        )
    )
    with pytest.raises(ModelExportError, match="Dense"):
        read_layout(model)


def test_model_ids_name_their_backend() -> None:
    assert qualified_model_id("all-MiniLM-L6-v2", None) == "onnx-int8:all-MiniLM-L6-v2"
    assert qualified_model_id("all-MiniLM-L6-v2", "torch") == "all-MiniLM-L6-v2"
    assert qualified_model_id("torch:all-MiniLM-L6-v2", None) == "all-MiniLM-L6-v2"
    assert qualified_model_id("all-MiniLM-L6-v2", None, fallback="torch") == "all-MiniLM-L6-v2"
    assert qualified_model_id("onnx:/models/x", None, fallback="torch") == "onnx:/models/x"
    assert qualified_model_id("hash:64", "onnx") == "hash:64"
    assert [backend_of(m) for m in ("all-MiniLM-L6-v2", "onnx:x", "onnx-int8:x", "hash:8")] == [
        "torch",
        "onnx",
        "onnx-int8",
        None,
    ]
    with pytest.raises(InvalidInputError, match="backend"):
        qualified_model_id("onnx:x", "torch")


QUESTION = "When did Caroline go to the support group?"
FACTS = [
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "Melanie painted a sunrise over the lake.",
    "The car insurance must be renewed before the end of the month.",
]


def test_a_torch_home_keeps_working_with_default_settings(home: Path) -> None:
    with Memory.open(home, embed_backend="torch") as mem:
        assert mem.model_id == "all-MiniLM-L6-v2"
        for fact in FACTS:
            mem.archival("a").insert(fact)
    with Memory.open(home) as mem:  # defaults: the home's backend, not the default for new homes
        assert mem.model_id == "all-MiniLM-L6-v2"
        assert mem.archival("a").search(QUESTION, k=1, mode="vector")[0].text == FACTS[0]
        assert mem.verify().model_dump() == CLEAN_VERIFY
    with pytest.raises(ModelMismatchError, match="rebuild"):
        Memory.open(home, embed_backend="onnx-int8")


def test_switching_backend_goes_through_rebuild(home: Path) -> None:
    with Memory.open(home, embed_backend="torch") as mem:
        for fact in FACTS:
            mem.archival("a").insert(fact)
        [before] = mem._store.embeddings("a", mem.archival("a").tier)
    with Memory.open(home) as mem:
        reports = mem.rebuild(backend="onnx-int8")
        assert mem.model_id == "onnx-int8:all-MiniLM-L6-v2" and sum(r.reembedded for r in reports) == 3
        [batch] = mem._store.embeddings("a", mem.archival("a").tier)
        assert set(batch.models) == {"onnx-int8:all-MiniLM-L6-v2"}
        assert cosines(batch.vectors, before.vectors).min() >= 0.95
        assert mem.verify().model_dump() == CLEAN_VERIFY
    with Memory.open(home) as mem:
        assert mem.model_id == "onnx-int8:all-MiniLM-L6-v2"
        assert mem.archival("a").search(QUESTION, k=1, mode="vector")[0].text == FACTS[0]


def test_cli_backend_option_and_rebuild(home: Path) -> None:
    run_cli("--embed-backend", "torch", "add", FACTS[0], "--agent", "a", "--tier", "archival", home=home)
    refused = run_cli(
        "--embed-backend", "onnx", "search", QUESTION, "--agent", "a", "--tier", "archival", home=home, check=False
    )
    assert refused.returncode == 2 and "memvec rebuild" in refused.stderr
    rebuilt = json.loads(run_cli("--embed-backend", "onnx", "rebuild", "--json", home=home).stdout)
    assert rebuilt["model"] == "onnx:all-MiniLM-L6-v2" and rebuilt["rebuilt"][0]["reembedded"] == 1
    hits = json.loads(run_cli("search", QUESTION, "--agent", "a", "--tier", "archival", "--json", home=home).stdout)
    assert hits[0]["text"] == FACTS[0]


def test_search_with_the_onnx_backend_does_not_import_torch(home: Path) -> None:
    run_cli("add", FACTS[0], "--agent", "a", "--tier", "archival", home=home)  # exports once if needed
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['memvec', '--home', {str(home)!r}, 'search', {QUESTION!r}, '--agent', 'a', "
        "'--tier', 'archival', '--json']\n"
        "try:\n    runpy.run_module('memvec', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("NO-TORCH") and FACTS[0] in out
