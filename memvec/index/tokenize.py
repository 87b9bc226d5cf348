"""The tokenizer shared by the BM25 index and its queries.

Text is NFKC-normalized and lowercased, split into runs of Unicode word characters (``\\w+``;
so "don't" -> "don", "t" and "e-mail" -> "e", "mail"), English stopwords are dropped, and each
remaining alphabetic token is reduced with the Snowball English stemmer (PyStemmer), so "running"
and "runs" meet at "run". Tokens with digits (UUID pieces, versions, codes) are kept as they are.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"\w+")

# A short list: dropping more (e.g. "not", "no") would change the meaning of memories.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could d did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just ll m
    me more most my myself of off on once only or other our ours ourselves out over own re s same
    she should so some such t than that the their theirs them themselves then there these they this
    those through to too under until up ve very was we were what when where which while who whom why
    will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Index and query tokens of ``text`` (duplicates kept: BM25 counts term frequency)."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).lower())
    kept = [w for w in words if w not in STOPWORDS]
    stemmer = _stemmer()
    # Only alphabetic words are stemmed: "3f2a9c1e" must stay a different token from "3f2a9c1".
    return [stemmer.stemWord(w) if w.isalpha() else w for w in kept]


def date_words(iso_time: str) -> str:
    """'2023-05-08T13:56:00.000000Z' -> '8 May 2023' (the words a question would use)."""
    try:
        when = datetime.fromisoformat(iso_time.removesuffix("Z"))
    except ValueError:
        return ""
    return f"{when.day} {when.strftime('%B')} {when.year}"


def plain_tokens(text: str) -> set[str]:
    """The naive baseline's tokens: distinct lowercase word runs, no stemming, no stopwords."""
    return set(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))
