"""Edit distance for spelling suggestions (the vocabulary check of a question's terms): RapidFuzz's optimal
string alignment distance (C++), which gives what the hand-written dynamic programme it replaced gave on every
pair within the limit (tests/knowledge/test_text.py holds it to a reference implementation)."""

from __future__ import annotations

from rapidfuzz.distance import OSA


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edit distance of `a` and `b` where swapping two adjacent letters counts as one edit, as it is typed
    ("recieve"), or `limit` + 1 whenever it exceeds `limit` (optimal string alignment: a swapped pair is not
    edited again, so "ca" -> "abc" is 3, not Damerau-Levenshtein's 2)."""
    return OSA.distance(a, b, score_cutoff=limit)
