"""The ranker's trees compiled for ONNX Runtime: one graph per tier of a ranker file, each one
TreeEnsemble node (ai.onnx.ml opset 5, doubles throughout), so a search's 50 candidates walk 200
trees in C++ instead of in numpy steps. One graph per tier, not one for the file: ONNX Runtime runs
every node of a graph whatever output is asked, so a search paid for every tier's trees. `make
train-ranker` writes the graphs beside the JSON (`compile_ranker` needs the onnx package, which
takes a second to import); search only hands the bytes to ONNX Runtime, which the default
embedding backend loads anyway. The numpy walk
(memvec.search.trees) stays the reference and the fallback: for a ranker file without its graphs,
or an ONNX Runtime that lacks the operator.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from memvec.search.trees import TreeEnsemble, zeroed

log = logging.getLogger("memvec.search")

Matrix = npt.NDArray[np.float64]
INPUT = "features"
# Pinned so the file's bytes do not depend on the installed onnx package (make train-ranker is
# byte-for-byte reproducible): ONNX Runtime 1.20, the oldest memvec accepts, reads both.
IR_VERSION = 10
ML_OPSET = 5
_LEQ = 0  # TreeEnsemble's BRANCH_LEQ: left when value <= threshold, as LightGBM splits


def compile_ranker(tiers: dict[str, TreeEnsemble], n_features: int) -> dict[str, bytes]:
    """Each tier's ONNX model (see compile_tier)."""
    return {tier: compile_tier(tier, trees, n_features) for tier, trees in sorted(tiers.items())}


def compile_tier(tier: str, trees: TreeEnsemble, n_features: int) -> bytes:
    """The ONNX model of one tier's `trees` (output `<tier>`: each row's raw score, the sum of its leaves)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [_tree_node(tier, trees)],
        "memvec-ranker",
        [helper.make_tensor_value_info(INPUT, TensorProto.DOUBLE, [None, n_features])],
        [helper.make_tensor_value_info(tier, TensorProto.DOUBLE, [None, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", ML_OPSET)])
    model.ir_version = IR_VERSION
    serialized: bytes = model.SerializeToString()
    return serialized


def _tree_node(tier: str, trees: TreeEnsemble) -> Any:
    """One TreeEnsemble node: split nodes and leaves in tables of their own, as opset 5 wants them.
    A tree that is a single leaf gets a split that always goes left, to that leaf."""
    from onnx import helper, numpy_helper

    leaves = np.flatnonzero(trees.feature < 0)
    splits = [int(node) for node in np.flatnonzero(trees.feature >= 0)]
    stumps = [int(root) for root in trees.roots if trees.feature[root] < 0]
    leaf_at = {int(node): i for i, node in enumerate(leaves)}
    split_at = {node: i for i, node in enumerate([*splits, *(-1 - root for root in stumps)])}

    def target(node: int) -> tuple[int, int]:  # (index in its table, 1 for a leaf)
        return (leaf_at[node], 1) if trees.feature[node] < 0 else (split_at[node], 0)

    true = [target(int(trees.left[node])) for node in splits] + [(leaf_at[root], 1) for root in stumps]
    false = [target(int(trees.right[node])) for node in splits] + [(leaf_at[root], 1) for root in stumps]
    roots = [split_at[int(root)] if trees.feature[root] >= 0 else split_at[-1 - int(root)] for root in trees.roots]
    thresholds = np.r_[trees.threshold[splits], np.full(len(stumps), np.inf)]
    return helper.make_node(
        "TreeEnsemble",
        [INPUT],
        [tier],
        domain="ai.onnx.ml",
        name=tier,
        aggregate_function=1,  # SUM
        n_targets=1,
        post_transform=0,  # NONE: raw scores; search takes the sigmoid itself
        tree_roots=roots,
        nodes_featureids=[int(trees.feature[node]) for node in splits] + [0] * len(stumps),
        nodes_splits=numpy_helper.from_array(thresholds.astype(np.float64)),
        nodes_modes=numpy_helper.from_array(np.full(len(thresholds), _LEQ, dtype=np.uint8)),
        nodes_truenodeids=[index for index, _ in true],
        nodes_trueleafs=[leaf for _, leaf in true],
        nodes_falsenodeids=[index for index, _ in false],
        nodes_falseleafs=[leaf for _, leaf in false],
        leaf_targetids=[0] * len(leaves),
        leaf_weights=numpy_helper.from_array(trees.value[leaves].astype(np.float64)),
    )


class CompiledTrees:
    """A compiled ranker file's trees, evaluated by ONNX Runtime, one session per tier (one thread:
    a search's trees are small work, and the server runs searches side by side)."""

    def __init__(self, models: Mapping[str, bytes]) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._sessions = {
            tier: ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            for tier, model in models.items()
        }
        for tier, session in self._sessions.items():
            if [output.name for output in session.get_outputs()] != [tier]:
                raise ValueError(f"the compiled trees for {tier!r} answer {session.get_outputs()[0].name!r}")
        self.tiers = frozenset(self._sessions)

    @classmethod
    def load(cls, models: Mapping[str, bytes]) -> CompiledTrees | None:
        """The compiled trees, or None (with a warning) where this ONNX Runtime cannot run them."""
        try:
            return cls(models)
        except Exception as exc:  # onnxruntime raises its own types; numpy ranks the same, slower
            log.warning("the ranker's compiled trees do not load (%s); its trees are walked in numpy", exc)
            return None

    def raw_scores(self, rows: Matrix, tier: str) -> Matrix:
        if len(rows) == 0:
            return np.zeros(0)
        features = np.ascontiguousarray(zeroed(rows), dtype=np.float64)
        result: Matrix = self._sessions[tier].run([tier], {INPUT: features})[0][:, 0]
        return result
