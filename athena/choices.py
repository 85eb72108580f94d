"""Modes and settings written as enums that parse their own names (CONVENTIONS.md: modes are enums)."""

from __future__ import annotations

from enum import Enum
from typing import Self


class Choice(Enum):
    """An enum whose `from_str` accepts a value case-insensitively and otherwise raises a ValueError that
    lists the valid ones ("unknown device 'tpu'; valid: auto, cpu, cuda")."""

    @classmethod
    def from_str(cls, value: str) -> Self:
        normalised = value.strip().lower() if isinstance(value, str) else value
        for member in cls:
            if member.value == normalised:
                return member
        noun = " ".join(part.lower() for part in _words(cls.__name__))
        valid = ", ".join(str(member.value) for member in cls)
        raise ValueError(f"unknown {noun} {value!r}; valid: {valid}")


def _words(name: str) -> list[str]:
    """ "FusionMode" -> ["Fusion", "Mode"]."""
    words: list[str] = []
    for char in name:
        if char.isupper() or not words:
            words.append(char)
        else:
            words[-1] += char
    return words
