"""IdMap against a plain dict, through any sequence of sets, pops and lookups."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec.index.idmap import IdMap

keys = st.one_of(st.integers(-5, 20), st.integers(-5, 3000))  # few keys: a key comes back often
operations = st.lists(
    st.one_of(
        st.tuples(st.just("set"), keys, st.integers(0, 10**6)),
        st.tuples(st.just("pop"), keys, st.just(0)),
        st.tuples(st.just("look"), keys, st.just(0)),  # lookups between changes: nothing stale is kept
    ),
    max_size=400,
)


@settings(max_examples=100, deadline=None)
@given(ops=operations, probe=st.lists(keys, max_size=50))
def test_behaves_like_a_dict(ops: list[tuple[str, int, int]], probe: list[int]) -> None:
    mapping, reference = IdMap(recent_limit=8), {}  # merges happen within a few operations
    for op, key, row in ops:
        if op == "set":
            mapping.set(key, row)
            reference[key] = row
        elif op == "look":
            asked = np.array([key, *reference], dtype=np.int64)
            np.testing.assert_array_equal(mapping.rows_for(asked), [reference.get(k, -1) for k in asked.tolist()])
        else:
            assert mapping.pop(key) == reference.pop(key, -1)
    assert len(mapping) == len(reference)
    asked = np.array(probe + list(reference), dtype=np.int64)
    np.testing.assert_array_equal(mapping.rows_for(asked), [reference.get(k, -1) for k in asked.tolist()])
    assert all((k in mapping) == (k in reference) for k in probe)
    got_keys, got_rows = mapping.items()
    assert got_keys.tolist() == sorted(reference)
    assert got_rows.tolist() == [reference[k] for k in sorted(reference)]


def test_from_arrays_refuses_duplicate_ids() -> None:
    import pytest

    with pytest.raises(ValueError, match="duplicate"):
        IdMap.from_arrays(np.array([3, 1, 3]), np.array([0, 1, 2]))


def test_lookups_between_changes_see_each_change() -> None:
    mapping = IdMap(recent_limit=8)
    for key in (5, 7, 9):
        mapping.set(key, key * 10)
    assert mapping.rows_for(np.array([5, 7, 9, 11])).tolist() == [50, 70, 90, -1]
    assert mapping.pop(7) == 70
    assert mapping.rows_for(np.array([5, 7, 9])).tolist() == [50, -1, 90]
    mapping.set(9, 91)
    mapping.set(11, 110)
    assert mapping.rows_for(np.array([9, 11])).tolist() == [91, 110]
