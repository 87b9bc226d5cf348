"""The lexical half of near-duplicate detection: do two texts say the same thing in the same words?

An archival insert is a near-duplicate of a current passage when their embeddings are close (the
engine's vector check, `DedupSettings.near_cosine`) AND this check passes: their content words, in
order, are the same but for case, punctuation, function words ("the", "also", ...) and one-letter
typos. A differing number or negation, a change of order ("Ana pays Bo" / "Bo pays Ana") or more other
words than `new_words` keeps them apart: that is how a changed fact reads ("lives in Lisbon" / "lives
in Berlin", "9 am" / "10 am", "likes" / "doesn't like"), and embeddings alone rate such pairs as
near-identical.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from difflib import SequenceMatcher

from memvec.index.tokenize import STOPWORDS

_WORD = re.compile(r"[\w']+")
FILLERS = frozenset({"also", "really", "actually", "quite", "indeed"})
NEGATIONS = frozenset({"not", "no", "never", "nor", "none", "nobody", "nothing", "neither", "nowhere", "without"})
IGNORED = STOPWORDS | FILLERS


def content_words(text: str) -> list[str]:
    """The words that carry the meaning, in order: case-folded, apostrophes kept (so "didn't" stays
    one word, a negation), function words and fillers left out."""
    found = _WORD.findall(unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'"))
    return [w for w in (w.strip("'") for w in found) if w and w not in IGNORED]


def content_key(text: str) -> str:
    """A digest of the content words in order: texts that differ only in case, punctuation, function
    words and fillers share it, so the store can find such a repeat by an indexed lookup."""
    return hashlib.sha1(" ".join(content_words(text)).encode()).hexdigest()


def _meaningful(word: str) -> bool:
    """A word no difference may touch: a negation, or one with a digit (a number, a code, a time)."""
    return word in NEGATIONS or word.endswith("n't") or any(c.isdigit() for c in word)


def _one_edit(a: str, b: str) -> bool:
    """One substitution, insertion, deletion or swap of neighbours turns `a` into `b` (a typo), for
    words of four letters or more: shorter words differ in meaning, not in spelling, and so do codes
    ("tok9x2" / "tok3x2": a word with a digit is never a typo of another)."""
    if min(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 1 or a == b or not (a.isalpha() and b.isalpha()):
        return False
    if len(a) > len(b):
        a, b = b, a
    start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    if len(a) < len(b):
        return a[start:] == b[start + 1 :]
    if a[start + 1 :] == b[start + 1 :]:
        return True
    return a[start : start + 2] == b[start : start + 2][::-1] and a[start + 2 :] == b[start + 2 :]


def near_identical(new: str, old: str, *, new_words: int = 0) -> bool:
    """Whether `new` repeats `old` (see the module docstring): their content words, in order, are the
    same but for one-letter typos and at most `new_words` others, none a number or a negation."""
    a, b = content_words(new), content_words(old)
    differing = 0
    for op, i1, i2, j1, j2 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if (
            op == "replace"
            and i2 - i1 == j2 - j1
            and all(_one_edit(x, y) for x, y in zip(a[i1:i2], b[j1:j2], strict=True))
        ):
            continue  # typos
        changed = a[i1:i2] + b[j1:j2]
        if any(_meaningful(word) for word in changed):
            return False
        differing += max(i2 - i1, j2 - j1)
    return differing <= new_words
