"""Edit distance for spelling suggestions (the vocabulary check of a question's terms)."""

from __future__ import annotations


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edit distance of `a` and `b` where swapping two adjacent letters counts as one edit, as it is typed
    ("recieve"), or `limit` + 1 as soon as it must exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb and ca != cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]
