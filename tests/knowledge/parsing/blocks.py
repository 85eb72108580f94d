"""What the per-format parser tests share: the fixtures folder and two ways of reading parsed blocks."""

from __future__ import annotations

from pathlib import Path

from knowledge.parsing import Block

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def kinds(blocks: list[Block]) -> list[str]:
    return [b.kind for b in blocks]


def by_text(blocks: list[Block], needle: str) -> Block:
    return next(b for b in blocks if needle in b.text)
