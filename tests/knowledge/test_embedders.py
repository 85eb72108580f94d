"""The configured embedder (the real model, int8 by default) as the answering step uses it."""

from __future__ import annotations

import numpy as np

from knowledge.embedders import get_embedder

WINDOWS = [
    "Only the first eight (8) characters are used.",
    "auth_pass 1234 }",
    "Display only listening sockets (these are omitted by default). This option is one of many that ss "
    "understands, and a much longer window pads every shorter one in a shared batch.",
]


def test_a_window_embedded_alone_does_not_depend_on_the_other_windows():
    """The int8 model scales activations per batch, so a batched text's vector would move with its neighbours
    and their padding; the embedder embeds each text alone. Chunks at ingestion and the answering step's
    sentence windows then match the question, which is always embedded alone."""
    embedder = get_embedder()
    together = embedder.embed_passages(WINDOWS, batch_size=64)
    for text, vector in zip(WINDOWS, together, strict=True):
        alone = embedder.embed_passages([text])[0]
        assert np.allclose(vector, alone, atol=1e-6)
    assert together.shape == (len(WINDOWS), embedder.dimension)
