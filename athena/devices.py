"""Which torch device the model backends (embedder, reranker) run on (`ATHENA_DEVICE=auto|cpu|cuda`), and the
numeric precision the embedder computes in on it (`ATHENA_EMBEDDER_PRECISION=auto|bf16|fp32|int8`)."""

from __future__ import annotations

from athena.choices import Choice


class Device(Choice):
    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"


def device_resolve(requested: str, *, cuda_available: bool) -> str:
    """The torch device for a requested setting.

    Parameters: `requested` — auto, cpu or cuda; `cuda_available` — whether torch sees a CUDA device.
    Returns "cpu" or "cuda": auto takes the GPU when there is one. Asking for cuda where there is none is
    an error rather than a silent fall-back to a CPU many times slower than the worker was sized for.
    """
    device = Device.from_str(requested)
    if device is Device.CUDA and not cuda_available:
        raise RuntimeError("ATHENA_DEVICE=cuda but torch sees no CUDA device (install a CUDA build of torch)")
    if device is Device.AUTO:
        return "cuda" if cuda_available else "cpu"
    return device.value


def torch_device(requested: str | None = None) -> str:
    """`device_resolve` for this process: the setting (or `requested`) against what torch sees."""
    import torch
    from django.conf import settings

    return device_resolve(requested or settings.ATHENA_DEVICE, cuda_available=torch.cuda.is_available())


class Precision(Choice):
    AUTO = "auto"
    BF16 = "bf16"
    FP32 = "fp32"
    INT8 = "int8"


# CPU flags under which oneDNN runs bfloat16 matrix products natively (AVX-512 BF16 or AMX tiles); without them
# torch emulates bf16 and it is slower than fp32
BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The first CPU's feature flags as the kernel lists them (empty where there is no /proc/cpuinfo)."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def precision_resolve(requested: str, *, device: str, flags: frozenset[str]) -> str:
    """The precision the embedder computes in: "fp16" on a GPU, "bf16", "fp32" or "int8" on a CPU.

    auto takes bf16 where the CPU multiplies bfloat16 natively (vectors within 1e-4 cosine of fp32, ~3x its
    speed in batches) and fp32 elsewhere, so every machine's vectors agree to that precision and can share an
    index. int8 (ONNX Runtime, int8 weights with one scale per channel, 1.7x torch fp32's speed where there is no
    bf16) is only taken when asked for: its vectors are within ~.025 cosine of fp32, not 1e-3, so an index built
    with it carries its own model name and every worker must use it.
    """
    precision = Precision.from_str(requested)
    if device == "cuda":
        if precision is Precision.INT8:
            raise RuntimeError("ATHENA_EMBEDDER_PRECISION=int8 is a CPU kernel; use auto on a GPU")
        return "fp16"
    if precision is Precision.AUTO:
        return "bf16" if flags & BF16_CPU_FLAGS else "fp32"
    return precision.value
