"""ATHENA_DEVICE: the embedder and the reranker run where the setting says (the CPU path; CI has no GPU)."""

import numpy as np
import pytest
from django.test import override_settings

from athena.devices import Device, device_resolve, torch_device


@pytest.mark.unit
@pytest.mark.parametrize(
    ("requested", "cuda", "expected"),
    [
        ("auto", False, "cpu"),
        ("auto", True, "cuda"),
        ("cpu", True, "cpu"),
        ("cuda", True, "cuda"),
        (" CPU ", False, "cpu"),
    ],
)
def test_device_resolve(requested, cuda, expected):
    assert device_resolve(requested, cuda_available=cuda) == expected


@pytest.mark.unit
def test_cuda_without_a_gpu_and_unknown_values_are_errors_that_say_what_is_valid():
    with pytest.raises(RuntimeError, match="no CUDA device"):
        device_resolve("cuda", cuda_available=False)
    with pytest.raises(ValueError, match="valid: auto, cpu, cuda"):
        Device.from_str("tpu")


@pytest.mark.slow
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
