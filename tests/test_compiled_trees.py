"""The ranker's trees compiled for ONNX Runtime score as the numpy walk does (the reference), the
shipped graphs are the shipped ranker files compiled, and searches use them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memvec.search import rerank
from memvec.search.compiled_trees import CompiledTrees, compile_ranker
from memvec.search.rerank import FEATURES, Ranker, compiled_name, shipped_rankers
from memvec.search.trees import TreeEnsemble, from_nested_trees

SEARCH_DIR = Path(rerank.__file__).parent


def lightgbm_trees(seed: int) -> tuple[TreeEnsemble, np.ndarray]:
    """Trees fitted on rows of few distinct values (many rows sit on a threshold), plus a tree that
    is a single leaf (a split-less tree the compiled form must still count), and those rows."""
    import lightgbm

    from benchmarks.train_ranker import ROUNDS, TREE_PARAMS

    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=(2000, 6)), 1)
    y = ((x[:, 0] + x[:, 1] * x[:, 2] + 0.3 * rng.normal(size=2000)) > 0).astype(np.float64)
    booster = lightgbm.train(TREE_PARAMS, lightgbm.Dataset(x, y, params={"verbose": -1}), num_boost_round=ROUNDS)
    nested = [t["tree_structure"] for t in booster.dump_model()["tree_info"]]
    return from_nested_trees([*nested, {"leaf_value": 0.25}]), x


def on_every_threshold(trees: TreeEnsemble, row: np.ndarray) -> np.ndarray:
    """One copy of `row` per split, with that split's feature exactly at its threshold."""
    rows = np.tile(row, (len(trees.feature), 1))
    splits = np.flatnonzero(trees.feature >= 0)
    rows[splits, trees.feature[splits]] = trees.threshold[splits]
    return rows


@pytest.mark.parametrize("seed", [3, 4])
def test_compiled_trees_score_as_the_numpy_walk(seed: int) -> None:
    trees, x = lightgbm_trees(seed)
    compiled = CompiledTrees(compile_ranker({"recall": trees, "archival": trees}, x.shape[1]))
    assert compiled.tiers == {"recall", "archival"}
    edges = np.r_[x[:500], on_every_threshold(trees, x[0]), np.zeros((3, 6)), np.full((3, 6), 1e-36)]
    for tier in ("recall", "archival"):
        np.testing.assert_allclose(compiled.raw_scores(edges, tier), trees.raw_scores(edges), rtol=0, atol=1e-12)
    assert compiled.raw_scores(np.zeros((0, 6)), "recall").shape == (0,)


def test_the_shipped_graphs_are_the_shipped_ranker_files_compiled() -> None:
    files = sorted(SEARCH_DIR.glob(rerank.RANKER_FILES))
    assert len(files) == len(shipped_rankers()) >= 2
    for path in files:
        ranker = Ranker.load(path)
        shipped = {tier: path.with_name(compiled_name(path.name, tier)).read_bytes() for tier in ranker.tiers}
        assert compile_ranker(ranker.tiers, len(FEATURES)) == shipped, f"run make train-ranker: {path.name} changed"
    graphs = {path.name for path in SEARCH_DIR.glob("ranker*.onnx")}
    expected = {compiled_name(path.name, tier) for path in files for tier in Ranker.load(path).tiers}
    assert graphs == expected, "a compiled graph without its ranker file"


def test_each_tier_runs_its_own_trees_only() -> None:
    """ONNX Runtime runs every node of a graph whatever output is asked: a graph holding every
    tier's trees would walk them all for each search."""
    import onnxruntime as ort

    for path in sorted(SEARCH_DIR.glob(rerank.RANKER_FILES)):
        for tier in Ranker.load(path).tiers:
            graph = path.with_name(compiled_name(path.name, tier)).read_bytes()
            session = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
            assert [output.name for output in session.get_outputs()] == [tier]
            assert graph.count(b"TreeEnsemble") == 1, f"{path.name}: {tier}'s graph holds other trees"


def test_searches_score_with_the_compiled_trees_and_agree_with_the_walk() -> None:
    rng = np.random.default_rng(5)
    for ranker in shipped_rankers():
        assert ranker.compiled is not None and ranker.compiled.tiers == set(ranker.tiers)
        walked = Ranker.from_json(ranker.to_json())  # the same trees, not compiled
        assert walked.compiled is None
        for tier in ranker.tiers:
            rows = rng.normal(size=(50, len(FEATURES)))
            np.testing.assert_array_equal(ranker.score(rows, tier), walked.score(rows, tier))


def test_a_graph_onnx_runtime_cannot_load_leaves_the_numpy_walk(caplog: pytest.LogCaptureFixture) -> None:
    assert CompiledTrees.load({"recall": b"not an onnx model"}) is None
    assert "walked in numpy" in caplog.text
