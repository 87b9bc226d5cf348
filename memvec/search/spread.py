"""Sessions spread over the first hits: a question about several conversations finds each of them.

Fusion ranks turns one by one, so a session that matches a question well fills the first hits with
its turns, and the other sessions the question is about (LongMemEval's multi-session questions,
LoCoMo's multi-hop ones) drop below them. The first SPREAD_HEAD hits are therefore picked one at a
time, each turn's score lowered by `penalty` for every turn of its session picked before it; the
hits after them follow in the score's order. A record without a session is a session of its own.
Picks are made from the whole candidate pool, so the first hits are the same whatever k is asked.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]

# The first hits an agent reads; past them a session's further turns keep their place (spreading the
# whole list pushed an answer out of the top 10 behind other sessions' weaker turns).
SPREAD_HEAD = 5


def spread_sessions(order: Ids, scores: Scores, sessions: Ids, penalty: float, head: int = SPREAD_HEAD) -> Ids:
    """`order` (positions into `scores` / `sessions`, best first) with its first `head` picks made
    greedily by score minus `penalty` times the picks already taken from the same session (-1: no
    session); ties go to the earlier position in `order`."""
    if penalty <= 0 or len(order) < 2:
        return order
    left = np.asarray(order, dtype=np.int64)
    rows, taken = sessions[left], np.zeros(len(left), dtype=np.float32)
    picks: list[int] = []
    for _ in range(min(head, len(left))):
        at = int(np.argmax(scores[left] - penalty * taken))
        picks.append(int(left[at]))
        if rows[at] >= 0:
            taken[rows == rows[at]] += 1.0
        keep = np.arange(len(left)) != at
        left, rows, taken = left[keep], rows[keep], taken[keep]
    return np.concatenate([np.asarray(picks, dtype=np.int64), left])
