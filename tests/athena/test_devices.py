"""ATHENA_DEVICE: the embedder and the reranker run where the setting says (the CPU path; CI has no GPU)."""

import pytest

from athena.devices import Device, device_resolve

pytestmark = [pytest.mark.unit]


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


def test_cuda_without_a_gpu_and_unknown_values_are_errors_that_say_what_is_valid():
    with pytest.raises(RuntimeError, match="no CUDA device"):
        device_resolve("cuda", cuda_available=False)
    with pytest.raises(ValueError, match="valid: auto, cpu, cuda"):
        Device.from_str("tpu")
