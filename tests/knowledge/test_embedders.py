"""The configured embedder (the real model; bf16 or fp32 by the CPU, int8 when named) as ingestion and the
answering step use it."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from athena.devices import torch_device

pytestmark = [pytest.mark.slow]

WINDOWS = [
    "Only the last twelve (12) digits are kept.",
    "seed_key 5678 }",
    "Show only idle tunnels (these are hidden unless asked). This flag is one of many that tidesync "
    "understands, and a much longer window pads every shorter one in a shared batch.",
]


@pytest.mark.parametrize("precision", ["auto", "fp32", "int8"])
def test_a_window_embedded_alone_does_not_depend_on_the_other_windows(precision):
    """Chunks embedded in batches at ingestion and the answering step's sentence windows must match the
    question, which is always embedded alone: a text's vector may not move with its batch neighbours and their
    padding (int8 scales activations per batch, so it embeds each text alone; bf16 and fp32 scale nothing)."""
    from knowledge.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder(precision=precision)
    together = embedder.embed_passages(WINDOWS, batch_size=64)
    for text, vector in zip(WINDOWS, together, strict=True):
        alone = embedder.embed_passages([text])[0]
        assert float(vector @ alone) > 1 - 1e-4
    assert together.shape == (len(WINDOWS), embedder.dimension)


def test_every_cpu_precision_but_int8_gives_the_same_vectors_under_one_name():
    """bf16 (where the CPU has it) and fp32 share an index, so they must agree; int8 is another vector space
    and says so in its name, which the index's model check compares."""
    from athena.devices import BF16_CPU_FLAGS, cpu_flags
    from knowledge.embedders import MiniLMEmbedder

    fp32 = MiniLMEmbedder(precision="fp32")
    auto = MiniLMEmbedder(precision="auto")
    int8 = MiniLMEmbedder(precision="int8")
    reference = fp32.embed_passages(WINDOWS)
    assert auto.embed_passages(WINDOWS).shape == reference.shape
    assert auto.precision == ("bf16" if cpu_flags() & BF16_CPU_FLAGS else "fp32")
    assert np.min(np.sum(auto.embed_passages(WINDOWS) * reference, axis=1)) > 0.999
    assert auto.name == fp32.name == "all-MiniLM-L6-v2"
    quantised = int8.embed_passages(WINDOWS)
    assert int8.name == "all-MiniLM-L6-v2+int8"
    assert np.min(np.sum(quantised * reference, axis=1)) < 0.9999  # really another computation
    assert float(auto.embed_query(WINDOWS[0]) @ reference[0]) > 0.999


def test_the_embedder_loads_on_the_device_the_setting_names_here_the_cpu():
    import torch

    from knowledge.embedders import MiniLMEmbedder

    with override_settings(ATHENA_DEVICE="auto"):
        assert torch_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    with override_settings(ATHENA_DEVICE="cpu"):
        embedder = MiniLMEmbedder(precision="fp32")
        vectors = embedder.embed_passages(["BGP hold time is 90 seconds.", "chrony uses three NTP servers."])
    assert embedder.device == "cpu"
    parameter = next(embedder._load().parameters())
    assert parameter.device.type == "cpu" and parameter.dtype == torch.float32
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    explicit = MiniLMEmbedder(precision="fp32", device="cpu")
    assert np.allclose(explicit.embed_passages(["BGP hold time is 90 seconds."])[0], vectors[0], atol=1e-5)


def test_an_embed_task_of_32_chunks_is_not_one_pass_padded_to_its_longest_chunk():
    """An ingest's embed tasks hold at most 32 chunks (knowledge.tasks.EMBED_TASK_CHUNKS). Embedded in one
    forward pass, such a task's short chunks were padded to its longest: 30% more model time than the same
    chunks embedded in one call. The passes of a small call are shorter, over texts sorted by length, and
    their vectors are those of one pass (padding is masked)."""
    import random

    from knowledge.embedders import MiniLMEmbedder

    rng = random.Random(7)
    words = [
        "the",
        "router",
        "keeps",
        "its",
        "neighbours",
        "while",
        "the",
        "session",
        "resets",
        "and",
        "the",
        "hold",
        "timer",
        "runs",
    ]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 180))) for _ in range(32)]
    embedder = MiniLMEmbedder()  # as ingestion embeds: bf16 batches where the CPU has bf16
    model = embedder._load()
    passes: list[tuple[int, int, int]] = []  # (texts, padded length, real tokens) of each forward pass
    forward = model.forward

    def counted(features, *args, **kwargs):  # type: ignore[no-untyped-def]
        mask = features["attention_mask"]
        passes.append((int(mask.shape[0]), int(mask.shape[1]), int(mask.sum())))
        return forward(features, *args, **kwargs)

    model.forward = counted
    try:
        vectors, _ = embedder.embed_passages_pooled(texts, [[] for _ in texts])
        passes_small = list(passes)
        passes.clear()
        one_pass, _ = embedder.embed_passages_pooled(texts, [[] for _ in texts], batch_size=32)
    finally:
        del model.forward

    def padding(runs: list[tuple[int, int, int]]) -> float:
        return 1 - sum(real for _, _, real in runs) / sum(n * width for n, width, _ in runs)

    if embedder._passage_encoder is not None:  # fp32 here: ONNX Runtime, one text per run, nothing padded
        assert not passes_small and not passes
        return
    assert len(passes_small) == 4 and {n for n, _, _ in passes_small} == {8}, passes_small
    assert padding(passes_small) < padding(passes) / 2, (padding(passes_small), padding(passes))
    assert float(np.min(np.sum(vectors * one_pass, axis=1))) > 1 - 1e-4
