"""A chunk's answer sentences and their spans in its text: what ingestion pools sentence vectors over must be
what answering reads as sentences."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge.embedders import SpanVectors, span_vectors_pack, span_vectors_unpack
from knowledge.indexing import embedding_input, embedding_text
from knowledge.text import passage_sentences, sentence_spans

pytestmark = pytest.mark.unit

RUNBOOK = """Failover of the resolver pair
The primary answers on 10.0.0.53.  When it stops,
the secondary takes over within 30 s.

- Check `dig @10.0.0.54 example.org`.
- Page the on-call engineer.
"""


def test_the_title_line_is_not_glued_to_the_first_sentence():
    parts = passage_sentences(RUNBOOK, "Failover of the resolver pair")
    assert parts[0] == "The primary answers on 10.0.0.53."
    assert passage_sentences(RUNBOOK, "Another title")[0].startswith("Failover of the resolver pair")


def test_every_sentence_is_found_in_order_across_wrapped_lines_and_list_markers():
    parts = passage_sentences(RUNBOOK, "Failover of the resolver pair")
    spans = sentence_spans(RUNBOOK, parts)
    assert None not in spans
    for part, (start, end) in zip(parts, spans, strict=True):
        assert " ".join(RUNBOOK[start:end].split()) == part
    starts = [start for start, _ in spans]  # type: ignore[misc]
    assert starts == sorted(starts)


def test_a_repeated_sentence_gets_its_own_occurrence_and_a_rewritten_one_none():
    text = "Restart the daemon. Check the log. Restart the daemon."
    spans = sentence_spans(text, ("Restart the daemon.", "Check the log.", "Restart the daemon."))
    assert spans == [(0, 19), (20, 34), (35, 54)]
    assert sentence_spans(text, ("Check the log.", "Restart the daemon.", "Nowhere in it.")) == [
        (20, 34),
        (35, 54),
        None,
    ]


def test_spans_in_what_the_embedder_sees_point_at_the_same_sentences():
    text, spans = embedding_input("Resolver runbook", "Failover", RUNBOOK)
    assert text == embedding_text("Resolver runbook", "Failover", RUNBOOK)
    parts = passage_sentences(RUNBOOK, "Resolver runbook")
    assert [" ".join(text[a:b].split()) for a, b in spans] == list(parts)  # type: ignore[misc]


def test_packed_sentence_vectors_round_trip_at_half_precision():
    rng = np.random.default_rng(3)
    pooled = SpanVectors(rng.normal(size=(5, 8)).astype(np.float32), np.array([4, 0, 12, 7, 300]))
    back = span_vectors_unpack(span_vectors_pack(pooled), 8)
    assert back.tokens.tolist() == [4, 0, 12, 7, 300]
    assert np.allclose(back.means, pooled.means, atol=2e-3)
    assert span_vectors_unpack(b"", 8).means.shape == (0, 8)
    with pytest.raises(ValueError, match="not whole 8-d"):
        span_vectors_unpack(b"\x00" * 19, 8)


def test_the_embedder_does_not_read_a_tables_rule_line() -> None:
    table = "Intro.\nname | value\n--- | ---\nretries | 3"
    text, spans = embedding_input("Doc", "", table)
    assert "---" not in text and text.endswith("name | value\n" + " " * 9 + "\nretries | 3")
    # the sentences' spans still point at the sentences
    assert [text[a:b] for a, b in (span for span in spans if span)] == [
        "Intro.",
        "name | value",
        "retries | 3",
    ]
