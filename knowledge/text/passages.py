"""A chunk's answer sentences, and where each lies in the chunk's text.

Answering reads a chunk as the sentences of `passage_sentences`; ingestion pools the embedder's token vectors
over the same sentences (`sentence_spans`), so that a sentence's vector is computed once, with the chunk, and
the two sides cannot disagree on what a sentence is.
"""

from __future__ import annotations

import re
from functools import lru_cache

from knowledge.text.sentence_splitter import sentences


@lru_cache(maxsize=512)
def passage_sentences(text: str, title: str) -> tuple[str, ...]:
    """The sentences of a chunk without the document's title line it may open with.

    The first chunk of a document starts with its title, on a line of its own and without a full stop, so
    the splitter would glue it to the first sentence ("Runbook - High CPU on core router Alert CORE-CPU-HIGH
    fires when ..."), which then matches every question about the document's topic. A section heading stays:
    a reference entry's heading names what its first sentence describes ("Queue.Size type | default ...").
    """
    first, _, rest = text.lstrip("\n").partition("\n")
    if title.strip() and first.strip() == title.strip() and rest.strip():
        return tuple(sentences(rest))
    return tuple(sentences(text))


def sentence_spans(text: str, parts: tuple[str, ...]) -> list[tuple[int, int] | None]:
    """The character span of each sentence of `parts` in `text`, searched in order.

    The splitter collapses whitespace and drops list and heading markers, so a sentence is found as its words
    in order with any whitespace between them. A sentence that cannot be found after the previous one (the
    splitter rewrote it) has no span, and its reader falls back to embedding it on its own.
    """
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for part in parts:
        words = part.split()
        if not words:
            spans.append(None)
            continue
        match = re.compile(r"\s+".join(re.escape(word) for word in words)).search(text, cursor)
        if match is None:
            spans.append(None)
            continue
        spans.append((match.start(), match.end()))
        cursor = match.end()
    return spans
