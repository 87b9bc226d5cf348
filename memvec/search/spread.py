"""Sessions spread over the first hits: a question about several conversations finds each of them.

Fusion ranks turns one by one, so a session that matches a question well fills the first hits with
its turns, and the other sessions the question is about (LongMemEval's multi-session questions,
LoCoMo's multi-hop ones) drop below them. The first SPREAD_HEAD hits are therefore picked one at a
time, each turn's score lowered by `penalty` for every turn of its session picked before it; the
hits after them follow in the score's order. A record without a session is a session of its own.
Picks are made from the whole candidate pool, so the first hits are the same whatever k is asked.

A search spreads when asked to, or, unless asked not to, when its question asks for a count or a total
("how many", "how much", "in total"): what it adds up was told on several occasions, which sit in
several sessions. Spreading every question costs the ones answered within one session (the answer is
often a session's second or third turn, and other sessions' turns take its place in the first hits),
so the cue is kept to the words that sum over occasions.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]

# The first hits an agent reads; past them a session's further turns keep their place (spreading the
# whole list pushed an answer out of the top 10 behind other sessions' weaker turns).
SPREAD_HEAD = 5


_ASKS_FOR_A_SUM = re.compile(r"\b(how\s+(many|much)|(in\s+)?total)\b", re.IGNORECASE)


def asks_for_a_sum(query: str) -> bool:
    """Whether `query` asks for a count or a total, whose parts were told on several occasions."""
    return _ASKS_FOR_A_SUM.search(query) is not None


def spreads(asked: bool | None, query: str) -> bool:
    """Whether a search spreads its first hits over sessions: as `asked`, else (None) when its query
    asks for a sum."""
    return asks_for_a_sum(query) if asked is None else asked


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
