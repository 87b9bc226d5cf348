"""A boosted ensemble of decision trees, walked with numpy (no training library at run time): the
reference a shipped ranker's compiled graph (memvec.search.compiled_trees) is checked against, and
the fallback where there is none.

All trees live in one node table: node `i` splits on `feature[i]` (going left when the value is
`<= threshold[i]`) or, when `feature[i]` is -1, is a leaf worth `value[i]` whose children are
itself. Every candidate walks every tree at once for `depth` steps, so a search pays a handful
of vectorized steps rather than a Python loop per tree. The score of a row is the sum of the
leaves it reaches (the log-odds for a binary objective).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
Nodes = npt.NDArray[np.int64]
_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold, a float (1e-35f)


def zeroed(rows: Matrix) -> Matrix:
    """The rows as LightGBM reads them: a value within 1e-35 of zero is zero (its "zero" thresholds
    sit at -1e-35, so this decides which side an exact 0 falls on, as in the fitted model)."""
    result: Matrix = np.where(np.abs(rows) <= _ZERO, 0.0, rows)
    return result


@dataclass(frozen=True)
class TreeEnsemble:
    feature: Nodes
    threshold: Matrix
    left: Nodes
    right: Nodes
    value: Matrix
    roots: Nodes
    depth: int

    def __post_init__(self) -> None:
        n = len(self.feature)
        if not (len(self.threshold) == len(self.left) == len(self.right) == len(self.value) == n):
            raise ValueError("tree ensemble: node arrays differ in length")
        for name in ("left", "right", "roots"):
            links = getattr(self, name)
            if len(links) and (links.min() < 0 or links.max() >= n):
                raise ValueError(f"tree ensemble: {name} points outside the node table")
        leaves = self.feature < 0
        if np.any(self.left[leaves] != np.flatnonzero(leaves)) or np.any(self.right[leaves] != np.flatnonzero(leaves)):
            raise ValueError("tree ensemble: a leaf must be its own child")

    @property
    def features_used(self) -> int:
        """One more than the highest feature index a split reads (0 for stumps)."""
        return int(self.feature.max(initial=-1)) + 1

    def raw_scores(self, rows: Matrix) -> Matrix:
        """The sum over trees of the leaf each row reaches."""
        if len(rows) == 0 or len(self.roots) == 0:
            return np.zeros(len(rows))
        rows = zeroed(rows)
        # Every split's answer for every row at once, then each row walks its trees by lookups.
        goes_left = (rows[:, np.maximum(self.feature, 0)] <= self.threshold).ravel()  # a leaf reads any column
        row_start = (np.arange(len(rows)) * len(self.feature))[:, None]
        node = np.tile(self.roots, (len(rows), 1))
        for _ in range(self.depth):
            node = np.where(goes_left[row_start + node], self.left[node], self.right[node])
        result: Matrix = self.value[node].sum(axis=1)
        return result

    def to_json(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "roots": self.roots.tolist(),
            "feature": self.feature.tolist(),
            "threshold": self.threshold.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "value": self.value.tolist(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TreeEnsemble:
        def ints(name: str) -> Nodes:
            return np.array(data[name], dtype=np.int64)

        def floats(name: str) -> Matrix:
            return np.array(data[name], dtype=np.float64)

        return cls(
            feature=ints("feature"),
            threshold=floats("threshold"),
            left=ints("left"),
            right=ints("right"),
            value=floats("value"),
            roots=ints("roots"),
            depth=int(data["depth"]),
        )


class _Builder:
    """Flattens nested trees (LightGBM's `dump_model` shape) into one node table."""

    def __init__(self) -> None:
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.value: list[float] = []
        self.depth = 0

    def add(self, node: dict[str, Any], level: int = 0) -> int:
        at = len(self.feature)
        self.feature.append(-1)
        self.threshold.append(0.0)
        self.left.append(at)
        self.right.append(at)
        self.value.append(0.0)
        if "leaf_value" in node:
            self.value[at] = float(node["leaf_value"])
            self.depth = max(self.depth, level)
            return at
        if node.get("decision_type", "<=") != "<=" or node.get("missing_type", "None") != "None":
            raise ValueError("only numeric '<=' splits without missing-value handling are supported")
        self.feature[at] = int(node["split_feature"])
        self.threshold[at] = float(node["threshold"])
        self.left[at] = self.add(node["left_child"], level + 1)
        self.right[at] = self.add(node["right_child"], level + 1)
        return at


def from_nested_trees(trees: list[dict[str, Any]]) -> TreeEnsemble:
    """An ensemble from nested split dicts (`split_feature`, `threshold`, `left_child`,
    `right_child`; leaves hold `leaf_value`), as LightGBM's `Booster.dump_model()["tree_info"][i]
    ["tree_structure"]` gives them."""
    builder = _Builder()
    roots = [builder.add(tree) for tree in trees]
    return TreeEnsemble(
        feature=np.array(builder.feature, dtype=np.int64),
        threshold=np.array(builder.threshold, dtype=np.float64),
        left=np.array(builder.left, dtype=np.int64),
        right=np.array(builder.right, dtype=np.int64),
        value=np.array(builder.value, dtype=np.float64),
        roots=np.array(roots, dtype=np.int64),
        depth=builder.depth,
    )
