"""Who is asking: the access identity every selector and retriever takes (CONVENTIONS.md: access-checked
reads). It lives in the core layer because knowledge's selectors, retrieval's search and the answering
pipeline all filter by it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Principal:
    """Who is asking. Only group membership (and ownership of private uploads) grants access; superuser
    status grants nothing extra."""

    user_id: int | None
    username: str
    group_ids: tuple[int, ...] = ()
    group_names: tuple[str, ...] = ()

    @classmethod
    def from_user(cls, user: Any) -> Principal:
        groups = list(user.groups.order_by("id").values_list("id", "name"))
        return cls(user.pk, user.username, tuple(g[0] for g in groups), tuple(g[1] for g in groups))
