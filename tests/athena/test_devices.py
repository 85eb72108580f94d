"""ATHENA_DEVICE and ATHENA_EMBEDDER_PRECISION: the models run where, and in the precision, the settings and
the CPU say (the CPU path; CI has no GPU)."""

import pytest

from athena.devices import Device, Precision, cpu_flags, device_resolve, precision_resolve

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


AMX = frozenset({"avx2", "avx512f", "amx_bf16", "amx_tile"})
AVX2 = frozenset({"avx2", "fma"})


@pytest.mark.parametrize(
    ("requested", "device", "flags", "expected"),
    [
        ("auto", "cpu", AMX, "bf16"),
        ("auto", "cpu", frozenset({"avx512_bf16"}), "bf16"),
        ("auto", "cpu", AVX2, "fp32"),  # torch would emulate bf16, slower than fp32
        ("auto", "cuda", AVX2, "fp16"),
        ("fp32", "cpu", AMX, "fp32"),
        ("INT8", "cpu", AMX, "int8"),
        ("bf16", "cpu", AVX2, "bf16"),  # named explicitly: honoured, if slow
    ],
)
def test_precision_resolve(requested, device, flags, expected):
    assert precision_resolve(requested, device=device, flags=flags) == expected


def test_int8_on_a_gpu_and_unknown_precisions_are_errors():
    with pytest.raises(RuntimeError, match="CPU kernel"):
        precision_resolve("int8", device="cuda", flags=AVX2)
    with pytest.raises(ValueError, match="valid: auto, bf16, fp32, int8"):
        Precision.from_str("fp8")


def test_cpu_flags_reads_the_kernels_flag_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 amx_bf16\n\nflags\t: other\n"
    )
    assert cpu_flags(str(cpuinfo)) == {"fpu", "avx2", "amx_bf16"}
    assert cpu_flags(str(tmp_path / "missing")) == frozenset()
