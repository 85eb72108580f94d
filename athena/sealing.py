"""Sealed text for Redis: what a task carries or returns that holds a user's question, a document's passage or
an answer, and a conversation's remembered turns (agents.memory), are stored encrypted and authenticated (Fernet: AES-128-CBC +
HMAC-SHA256) under a key derived from SECRET_KEY, which the web processes and the workers hold and Redis does
not. Redis keeps what it holds in its append-only file and in dumps, where a message deleted once read (a
task taken, a result forgotten) still stays until the next rewrite; sealed, none of it is readable there.

Why not screen the question on the web side instead: the input guard's personal-data check is Presidio on
spaCy, which imports torch, and web processes never import torch (DESIGN.md section 9). So the question is
screened on the worker, and until then it is sealed: the broker message, its `argsrepr` header and a
redelivered copy hold only the token, so a question the guard refuses leaves no readable text in Redis.

Each use has a key of its own (Purpose): a token made for one use does not open as another (an answer
cannot be passed off as a question, nor a passage as an answer).

Rotation: tokens sealed under a key in SECRET_KEY_FALLBACKS are still opened (a task in flight while the key
changes); new ones use SECRET_KEY.
"""

from __future__ import annotations

import base64
import enum
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from kombu.utils import json as kombu_json

__all__ = ["InvalidToken", "KeyMismatch", "Purpose", "seal", "seal_json", "unseal", "unseal_json"]


class KeyMismatch(InvalidToken):
    """A token that no key this process holds opens: sealed by a host with another ATHENA_SECRET_KEY (a key
    rotation rolled out in one step, or a misconfigured host), or altered. Its message names the purpose and
    the settings, never the token's text, so a worker task may raise it as it is (the asker tells it apart:
    503, never a server error)."""


class Purpose(enum.Enum):
    """What a token is for: the HKDF `info` of its key."""

    # the first purpose's label is the one tokens had before there were others: a question sealed by a web
    # process of the earlier release still opens on an upgraded worker
    QUESTION = b"athena.sealing: question to the realtime worker"
    ANSWER = b"athena.sealing: answer from the realtime worker"
    PASSAGE = b"athena.sealing: passage to screen on the realtime worker, and back"
    STAGED = b"athena.sealing: staged documents to the embed worker"
    FILES = b"athena.sealing: files to stage on the ingest worker"
    MEMORY = b"athena.sealing: a conversation's turns in memory"


def _fernet(secret: str, purpose: Purpose) -> Fernet:
    # a key of its own for each purpose: SECRET_KEY itself signs sessions and must not be reused as-is
    info = purpose.value
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(key))


@lru_cache(maxsize=16)
def _keys(secret: str, fallbacks: tuple[str, ...], purpose: Purpose) -> MultiFernet:
    return MultiFernet([_fernet(secret, purpose), *(_fernet(old, purpose) for old in fallbacks)])


def _current(purpose: Purpose) -> MultiFernet:
    return _keys(settings.SECRET_KEY, tuple(getattr(settings, "SECRET_KEY_FALLBACKS", ()) or ()), purpose)


def seal(text: str, *, purpose: Purpose) -> str:
    """`text` encrypted and authenticated for `purpose`, as an ASCII token."""
    return _current(purpose).encrypt(text.encode("utf-8")).decode("ascii")


def unseal(token: str, *, purpose: Purpose) -> str:
    """The text of a token made by :func:`seal` for `purpose` under SECRET_KEY or one of SECRET_KEY_FALLBACKS;
    raises InvalidToken for anything else (a forged, altered or foreign token, or one made for another
    purpose), as KeyMismatch."""
    try:
        return _current(purpose).decrypt(token.encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise KeyMismatch(
            f"a sealed token ({purpose.name.lower()}) that neither ATHENA_SECRET_KEY nor ATHENA_SECRET_KEY_FALLBACKS "
            "opens: the host that sealed it holds another secret key (or it was altered)"
        ) from None


def seal_json(value: Any, *, purpose: Purpose) -> str:
    """A task's argument or result sealed as one token. kombu's JSON, the one Celery's serializer uses: what
    comes back out (a datetime, a UUID) is what an unsealed value came back as."""
    return seal(kombu_json.dumps(value), purpose=purpose)


def unseal_json(token: str, *, purpose: Purpose) -> Any:
    """The value of a token made by :func:`seal_json` for `purpose`."""
    return kombu_json.loads(unseal(token, purpose=purpose))
