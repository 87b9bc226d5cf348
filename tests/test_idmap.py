"""IdMap against a plain dict, through any sequence of sets, pops and lookups."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec.index.idmap import IdMap

keys = st.integers(-5, 3000)
operations = st.lists(
    st.one_of(st.tuples(st.just("set"), keys, st.integers(0, 10**6)), st.tuples(st.just("pop"), keys, st.just(0))),
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
