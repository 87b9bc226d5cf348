"""What the learned ranker reads of a record besides its scores: who said it (its role), how long it
is, and whether it names a time or asks a question. Kept beside the indexes, computed once when a
record is indexed, so a search reads no text from the store to rank its candidates.

Per record one int64 in an IdMap: the text's length, the role's code (a home has a handful of roles)
and three flag bits. Derived like the other index files: built from the store, saved beside them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memvec.index.idmap import IdMap

Ids = npt.NDArray[np.int64]

# Words that place an event in time: a "when" question's answer usually holds one ("yesterday",
# "last week", "in May"), and a turn that asks a question rarely holds the answer.
TIME_WORDS = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|weekend|recently|soon|(?:day|week|month|year)s?|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|\d{4})\b",
    re.IGNORECASE,
)
_TIME, _ENDS_QUESTION, _HAS_QUESTION = 1, 2, 4
_FLAG_BITS, _ROLE_BITS = 3, 20  # the length takes the bits above these


def text_flags(text: str) -> int:
    """The flag bits of a text: names a time, ends with a question mark, holds one."""
    return (
        (_TIME if TIME_WORDS.search(text) else 0)
        | (_ENDS_QUESTION if text.rstrip().endswith("?") else 0)
        | (_HAS_QUESTION if "?" in text else 0)
    )


@dataclass(frozen=True)
class Facts:
    """Parallel over the ids asked for; an id not held (-1, or deleted) reads as an empty text."""

    roles: list[str | None]
    lengths: npt.NDArray[np.int64]
    time_words: npt.NDArray[np.bool_]
    ends_question: npt.NDArray[np.bool_]
    has_question: npt.NDArray[np.bool_]

    def first(self, count: int) -> Facts:
        return self._part(slice(None, count))

    def after(self, count: int) -> Facts:
        """Those past the first `count`."""
        return self._part(slice(count, None))

    def _part(self, rows: slice) -> Facts:
        return Facts(
            self.roles[rows],
            self.lengths[rows],
            self.time_words[rows],
            self.ends_question[rows],
            self.has_question[rows],
        )


class RecordFacts:
    def __init__(self) -> None:
        self._roles: list[str | None] = [None]  # code 0: no role
        self._code_of_role: dict[str | None, int] = {None: 0}
        self._packed = IdMap()

    def _code(self, role: str | None) -> int:
        code = self._code_of_role.get(role)
        if code is None:
            if len(self._roles) >= 1 << _ROLE_BITS:
                raise ValueError(f"more than {1 << _ROLE_BITS} distinct roles in one tier")
            code = self._code_of_role[role] = len(self._roles)
            self._roles.append(role)
        return code

    def add(self, ids: Ids, roles: Sequence[str | None], texts: Sequence[str]) -> None:
        for record_id, role, text in zip(ids.tolist(), roles, texts, strict=True):
            packed = (len(text) << (_ROLE_BITS + _FLAG_BITS)) | (self._code(role) << _FLAG_BITS) | text_flags(text)
            self._packed.set(record_id, packed)

    def remove(self, ids: Ids) -> None:
        for record_id in ids.tolist():
            self._packed.pop(record_id)

    def of(self, ids: Ids) -> Facts:
        packed = self._packed.rows_for(np.asarray(ids, dtype=np.int64))
        held = packed >= 0
        packed = np.where(held, packed, 0)
        codes = (packed >> _FLAG_BITS) & ((1 << _ROLE_BITS) - 1)
        return Facts(
            roles=[self._roles[code] for code in codes.tolist()],
            lengths=packed >> (_ROLE_BITS + _FLAG_BITS),
            time_words=(packed & _TIME) > 0,
            ends_question=(packed & _ENDS_QUESTION) > 0,
            has_question=(packed & _HAS_QUESTION) > 0,
        )

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        ids, packed = self._packed.items()
        with open(path, "wb") as fh:
            np.savez(fh, roles=np.frombuffer(json.dumps(self._roles).encode(), dtype=np.uint8), ids=ids, packed=packed)

    @classmethod
    def load(cls, path: Path) -> RecordFacts:
        facts = cls()
        with np.load(path, allow_pickle=False) as data:
            facts._roles = json.loads(data["roles"].tobytes().decode())
            facts._code_of_role = {role: code for code, role in enumerate(facts._roles)}
            facts._packed = IdMap.from_arrays(data["ids"].astype(np.int64), data["packed"].astype(np.int64))
        return facts
