"""The configured embedder (the real model, int8 by default) as the answering step uses it."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from athena.devices import torch_device
from knowledge.embedders import get_embedder

pytestmark = [pytest.mark.slow]

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


def test_the_embedder_loads_on_the_device_the_setting_names_here_the_cpu():
    import torch

    from knowledge.embedders import MiniLMEmbedder

    with override_settings(ATHENA_DEVICE="auto"):
        assert torch_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    with override_settings(ATHENA_DEVICE="cpu"):
        embedder = MiniLMEmbedder(quantize=False)
        vectors = embedder.embed_passages(["BGP hold time is 90 seconds.", "chrony uses three NTP servers."])
    assert embedder.device == "cpu"
    parameter = next(embedder._load().parameters())
    assert parameter.device.type == "cpu" and parameter.dtype == torch.float32
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    explicit = MiniLMEmbedder(quantize=False, device="cpu")
    assert np.allclose(explicit.embed_passages(["BGP hold time is 90 seconds."])[0], vectors[0], atol=1e-5)
