"""Sealed text for the message broker: a question travels to the realtime worker encrypted and authenticated
(Fernet: AES-128-CBC + HMAC-SHA256) under a key derived from SECRET_KEY, which the web processes and the
workers hold and Redis does not.

Why not screen the question on the web side instead: the input guard's personal-data check is Presidio on
spaCy, which imports torch, and web processes never import torch (DESIGN.md section 9). So the question is
screened on the worker, and until then it is sealed: the broker message, its `argsrepr` header and a
redelivered copy hold only the token, so a question the guard refuses leaves no readable text in Redis. The
result the worker stores carries no question text for a refused question (only the refusal and the entity
kinds).

Rotation: tokens sealed under a key in SECRET_KEY_FALLBACKS are still opened (a question in flight while the
key changes); new ones use SECRET_KEY.
"""

from __future__ import annotations

import base64
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

__all__ = ["InvalidToken", "seal", "unseal"]

_PURPOSE = b"athena.sealing: question to the realtime worker"


def _fernet(secret: str) -> Fernet:
    # a key of its own for this purpose: SECRET_KEY itself signs sessions and must not be reused as-is
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_PURPOSE).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(key))


@lru_cache(maxsize=4)
def _keys(secret: str, fallbacks: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([_fernet(secret), *(_fernet(old) for old in fallbacks)])


def _current() -> MultiFernet:
    return _keys(settings.SECRET_KEY, tuple(getattr(settings, "SECRET_KEY_FALLBACKS", ()) or ()))


def seal(text: str) -> str:
    """`text` encrypted and authenticated, as an ASCII token."""
    return _current().encrypt(text.encode("utf-8")).decode("ascii")


def unseal(token: str) -> str:
    """The text of a token made by :func:`seal` under SECRET_KEY or one of SECRET_KEY_FALLBACKS; raises
    InvalidToken for anything else (a forged, altered or foreign token)."""
    return _current().decrypt(token.encode("ascii")).decode("utf-8")
