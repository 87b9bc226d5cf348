"""The transfer report of the second stage (benchmarks/transfer.py): every held-out figure ranks a
group with trees that never saw it, and the cached candidates read back as they were written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import ranker_data, train_ranker, transfer
from benchmarks.ranker_data import Question
from tests.test_ranker import synthetic_questions


def family(name: str, groups: int, seed: int) -> list[Question]:
    found = synthetic_questions(seed)
    return [
        Question(f"{name} {n % groups}", "recall", q.features, q.keys, q.evidence, q.context)
        for n, q in enumerate(found)
    ]


def test_a_held_out_group_is_never_in_the_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    fits: list[set[str]] = []
    real_fitted = transfer.fitted

    def watched(train: dict[str, list[Question]], equal_families: bool = False) -> Any:
        fits.append({q.conversation for found in train.values() for q in found})
        return real_fitted(train, equal_families)

    def ranked(questions: list[Question], model: Any) -> list[tuple[list[str], set[str]]]:
        seen = fits[-1]
        assert not {q.conversation for q in questions} & seen, "a group ranked by trees fitted on it"
        return [(q.keys, q.evidence) for q in questions]

    monkeypatch.setattr(transfer, "fitted", watched)
    monkeypatch.setattr(transfer, "ranked", ranked)
    arms = transfer.experiment({"A": family("a", 3, 1), "B": family("b", 2, 2)})
    assert list(arms) == [
        "fusion (first stage)",
        "fitted on A only",
        "fitted on B only",
        "fitted on all",
        "fitted on all, families weighted equally",
    ]
    assert all(set(by_family) == {"A", "B"} for by_family in arms.values())
    assert {"a 0", "a 1", "a 2"} in fits  # trees on all of A rank B, which they never saw


def test_equal_family_weights_balance_a_small_family() -> None:
    big, small = family("a", 2, 3), family("b", 2, 4)[:5]
    captured: dict[str, Any] = {}

    def fit_tier(questions: list[Question], weights: list[float] | None = None) -> None:
        captured["weights"] = weights
        captured["questions"] = questions

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(train_ranker, "fit_tier", fit_tier)
        transfer.fitted({"A": big, "B": small}, equal_families=True)
        weights = np.array(captured["weights"])
        assert weights[: len(big)].sum() == pytest.approx(weights[len(big) :].sum())
        transfer.fitted({"A": big, "B": small})
        assert captured["weights"] is None


def test_cached_questions_read_back_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranker_data, "CACHE", tmp_path / "cache")
    questions = family("a", 2, 5)
    path = tmp_path / "family.npz"
    ranker_data.save(path, questions)
    back = ranker_data.load(path)
    assert [(q.conversation, q.tier, q.keys, q.evidence, q.context) for q in back] == [
        (q.conversation, q.tier, q.keys, q.evidence, q.context) for q in questions
    ]
    assert all(np.array_equal(a.features, b.features) for a, b in zip(back, questions, strict=True))
    built: list[int] = []

    def build(mark: int, result: list[Question]) -> Callable[[], list[Question]]:
        def made() -> list[Question]:
            built.append(mark)
            return result

        return made

    assert ranker_data.cached("x", "k", build(1, questions)) == questions
    again = ranker_data.cached("x", "k", build(2, []))
    assert built == [1] and [q.keys for q in again] == [q.keys for q in questions]
