"""Which torch device the model backends (embedder, reranker) run on: `ATHENA_DEVICE=auto|cpu|cuda`."""

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
