"""BM25 ranking over short texts: the index tool search (:mod:`.search`) ranks tools with.

Okapi BM25 (Robertson and Zaragoza, "The Probabilistic Relevance Framework:
BM25 and Beyond", 2009) with the usual ``k1 = 1.2``, ``b = 0.75`` and the
non-negative idf ``log(1 + (N - df + 0.5) / (df + 0.5))`` (as Lucene uses).
Written here rather than taken from a library: ``rank-bm25`` has had no
release since 2022 and scores every document for every query, ``bm25s``
needs numpy and scipy; what tool search needs is ~60 lines. The index keeps
a posting list per term with each document's term weight precomputed, so a
query costs the postings of its terms, not a pass over every document.

Tokens are lowercase runs of letters and digits, split at ``_``, ``-``, ``.``,
spaces and camelCase humps (``getWeather`` -> ``get``, ``weather``), with a
plural ``s`` dropped (``forecasts`` -> ``forecast``) and common English
function words left out (``in``, ``the``, ...: in a small corpus one of them
in a single description would weigh as much as a rare content word), so that
tool names and descriptions match the words a model writes.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Final

__all__ = ["BM25Index", "tokens"]

_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STOP: Final = frozenset(
    "a an and are as at be by can for from has have i in into is it its me my of on or "
    "our that the their then there these this to was we what when which who will with "
    "you your".split()
)


def tokens(text: str) -> list[str]:
    """The search terms of ``text``."""
    return [t for t in map(_term, _WORD.findall(text)) if t]


@functools.lru_cache(maxsize=1 << 16)  # words repeat across tools: each is worked out once
def _term(word: str) -> str:
    """The term of one word ('' for a function word)."""
    term = word.lower()
    if term in _STOP:
        return ""
    if len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
        return term[:-1]
    return term


class BM25Index:
    """Documents (term counts) ranked against a query by BM25."""

    __slots__ = ("idf", "postings", "size")

    def __init__(self, documents: Sequence[Counter[str]], *, k1: float = 1.2, b: float = 0.75):
        self.size = len(documents)
        lengths = [sum(d.values()) for d in documents]
        average = (sum(lengths) / self.size) if self.size else 1.0
        postings: dict[str, list[tuple[int, float]]] = {}
        get, k1_plus = postings.get, k1 + 1  # the loop runs once per term of every document
        for i, document in enumerate(documents):
            norm = k1 * (1 - b + b * lengths[i] / (average or 1.0))
            for term, tf in document.items():
                posting = get(term)
                if posting is None:
                    postings[term] = [(i, tf * k1_plus / (tf + norm))]
                else:
                    posting.append((i, tf * k1_plus / (tf + norm)))
        self.postings = postings
        n = self.size
        self.idf = {
            t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()
        }

    def search(self, terms: Iterable[str], limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best documents for ``terms``: (index, score), best first; ties in
        document order. Documents sharing no term with the query are not returned."""
        scores: dict[int, float] = {}
        for term in dict.fromkeys(terms):  # each term once, in order
            posting = self.postings.get(term)
            if posting is None:
                continue
            idf = self.idf[term]
            for i, weight in posting:
                scores[i] = scores.get(i, 0.0) + idf * weight
        best = heapq.nlargest(limit, sorted(scores.items()), key=itemgetter(1))
        return best
