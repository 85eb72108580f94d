"""What PostgreSQL can store: its text and JSONB refuse the NUL character (0x00), UTF-8 has no lone surrogates
(U+D800..U+DFFF, which Python keeps from undecodable command-line bytes or JSON escapes such as "\\ud800"),
and JSON has no NaN or infinity. A value holding one fails at the INSERT, after the request was accepted:
these checks find it first, so it is refused with a message (or, in the audit log, kept readable)."""

from __future__ import annotations

import math
import re
from typing import Any

_UNSTORABLE_CHARACTER = re.compile("[\x00\ud800-\udfff]")

# what an audit event keeps of a character the database cannot hold (the event must be written, not refused)
REPLACEMENT = "\ufffd"


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored, or None."""
    found = _UNSTORABLE_CHARACTER.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains a NUL character (0x00)"
    return f"contains a lone surrogate (U+{ord(found.group()):04X}), which is not a character"


def json_problem(value: Any) -> str | None:
    """Why the JSON value `value` cannot be stored in a JSONB column, or None: a string or key that
    `text_problem` refuses, or a number that is not finite."""
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"holds the number {value}, which JSON cannot represent"
    if isinstance(value, dict):
        for key, item in value.items():
            problem = (text_problem(key) if isinstance(key, str) else None) or json_problem(item)
            if problem:
                return problem
    elif isinstance(value, list | tuple):
        for item in value:
            problem = json_problem(item)
            if problem:
                return problem
    return None


def text_storable(text: str) -> str:
    """`text` with each character the database cannot hold replaced by U+FFFD."""
    return _UNSTORABLE_CHARACTER.sub(REPLACEMENT, text)


def json_storable(value: Any) -> Any:
    """`value` (decoded JSON) with every string and key made storable (`text_storable`) and a number that is
    not finite written as text ("nan", "inf")."""
    if isinstance(value, str):
        return text_storable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {
            (text_storable(key) if isinstance(key, str) else key): json_storable(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [json_storable(item) for item in value]
    return value
