"""The question encoder on ONNX Runtime.

Answering embeds one short text per question (and per sub-question). Torch runs the six MiniLM layers for it
in ~11 ms on one thread, most of it per-operator overhead, and holds the GIL between operators, so the BM25
and graph stages that run beside it in threads slow it further (27 ms at 300k chunks). ONNX Runtime runs the
same graph, exported from the same packaged weights, in ~4.6 ms and releases the GIL for the whole call.

Passages stay on torch in bf16: in batches bf16 autocast is faster (ORT fp32 measured 10 passages/s against
35). In fp32 (a CPU without bf16) they run one at a time through this export (`PassageEncoder`: no padding,
16.0 against torch's 11.8 passages/s on an AVX2 CPU), and in int8 through a copy of it with int8 weights
(`quantize`, also at install time; 19.8 passages/s).

The model is exported at install time (`manage.py export_query_model`, run by `make install`), never
downloaded. The file name carries a digest of the weights, so
a changed model is never read through an old export, and `QueryEncoder.load` checks the exported graph
against torch on probe texts before it is used: a question vector from ONNX is the torch vector (cosine
>= .9999), so both runtimes query one index.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

# where exports live: inside the virtual environment, next to the packages whose weights they come from
EXPORT_DIR = Path(sys.prefix) / "share" / "athena" / "onnx"
OPSET = 17
# texts the exported graph must embed as torch does before it is trusted (short, mid-length, with symbols)
PROBES = (
    "default keepalive",
    "How do I fail over the primary DNS server to the secondary one?",
    "ip route add 10.0.0.0/8 via 192.0.2.1 dev eth0 table 254 --max-port=65535",
)
MIN_PROBE_COSINE = 0.9999


class ExportUnavailable(RuntimeError):
    """The model cannot be served by ONNX Runtime (its pooling is not plain mean pooling, or no export)."""


def weights_digest(model_dir: str | os.PathLike[str]) -> str:
    """Twelve hex digits of SHA-256 over the model's weight files (names and bytes), in name order."""
    digest = hashlib.sha256()
    root = Path(model_dir)
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in {".safetensors", ".bin"}:
            digest.update(str(path.relative_to(root)).encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:12]


def export_path(model_dir: str | os.PathLike[str], export_dir: Path | None = None) -> Path:
    return (export_dir or EXPORT_DIR) / f"{Path(model_dir).name}-{weights_digest(model_dir)}.onnx"


def int8_path(fp32_export: Path) -> Path:
    """Where the int8 passage model quantised from `fp32_export` lives (next to it, same weights digest)."""
    return fp32_export.with_name(f"{fp32_export.stem}-int8.onnx")


def quantize(source: Path, target: Path) -> Path:
    """Quantise the fp32 export's matrix weights to int8, one scale per output channel (ONNX Runtime dynamic
    quantisation: activations are scaled per run, weights once). Written to a temporary name first.

    One scale per channel keeps every passage within ~.025 cosine of fp32 (per-tensor weights moved some to
    .88), and one text per run keeps the activation scales a function of that text alone."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def session_open(path: Path, *, threads: int) -> Any:
    """An ONNX Runtime CPU session over `path` with `threads` intra-op threads that do not busy-wait."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-waiting threads
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def mean_pooled(model: Any) -> bool:
    """Whether a SentenceTransformer is transformer -> mean pooling (-> normalise), the only shape the
    exported graph reproduces."""
    kinds = [type(module).__name__ for module in model]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    mode = getattr(model[1], "pooling_mode", None)  # sentence-transformers 6: one mode name
    return mode == "mean" or (mode is None and bool(getattr(model[1], "pooling_mode_mean_tokens", False)))


def export(model: Any, target: Path) -> Path:
    """Export a loaded mean-pooled SentenceTransformer's transformer (token embeddings out) to `target`,
    written to a temporary name first so a reader never sees half a file."""
    import torch

    if not mean_pooled(model):
        raise ExportUnavailable("only transformer + mean pooling models are exported")
    transformer = model[0].auto_model.eval()
    inputs = model.tokenizer(["probe text"], return_tensors="pt")
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in inputs]

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *tensors: Any) -> Any:
            return self.inner(**dict(zip(names, tensors, strict=True))).last_hidden_state

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "token_embeddings"]}
    try:
        with torch.no_grad():
            torch.onnx.export(
                TokenEmbeddings(transformer),
                tuple(inputs[name] for name in names),
                str(partial),
                input_names=names,
                output_names=["token_embeddings"],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


class QueryEncoder:
    """One ONNX Runtime session for question vectors (mean-pooled token embeddings, L2-normalised)."""

    def __init__(self, session: Any, tokenizer: Any, max_tokens: int) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.inputs = [i.name for i in session.get_inputs()]

    @classmethod
    def load(cls, model: Any, path: Path, *, threads: int) -> QueryEncoder:
        """A session over the export at `path` for the loaded torch `model`, checked against it on PROBES.

        Raises ExportUnavailable when the file is missing, onnxruntime is not installed, or the exported graph
        does not embed the probes as torch does."""
        if not mean_pooled(model):
            raise ExportUnavailable("the model's pooling is not plain mean pooling")
        if not path.exists():
            raise ExportUnavailable(f"no ONNX export at {path} (run `manage.py export_query_model`)")
        try:
            import onnxruntime  # noqa: F401
        except ImportError as exc:  # pragma: no cover - a dependency; only a broken install lacks it
            raise ExportUnavailable("onnxruntime is not installed") from exc
        encoder = cls(session_open(path, threads=threads), model.tokenizer, model.max_seq_length)
        import torch

        with torch.inference_mode():
            reference = model.encode(
                list(PROBES), batch_size=1, normalize_embeddings=True, show_progress_bar=False
            )
        for text, expected in zip(PROBES, reference, strict=True):
            cosine = float(np.dot(encoder.encode(text), expected))
            if cosine < MIN_PROBE_COSINE:
                raise ExportUnavailable(f"the ONNX export embeds a probe at cosine {cosine:.6f} to torch")
        return encoder

    def encode(self, text: str) -> np.ndarray:
        tokens, _ = self.tokens(text)
        vector = tokens.mean(axis=0)  # one text, no padding: every token counts, as in the model's pooling
        return (vector / (np.linalg.norm(vector) or 1.0)).astype(np.float32)

    def tokens(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The text's token vectors (special tokens included) and each token's character offsets."""
        features = self.tokenizer(
            [text],
            return_tensors="np",
            truncation=True,
            max_length=self.max_tokens,
            return_offsets_mapping=True,
        )
        feeds = {name: np.asarray(features[name], dtype=np.int64) for name in self.inputs}
        vectors = self.session.run(None, feeds)[0][0]  # InferenceSession.run is thread-safe
        return vectors.astype(np.float32), [(int(a), int(b)) for a, b in features["offset_mapping"][0]]


class PassageEncoder(QueryEncoder):
    """Passages on ONNX Runtime, one text per run (no padding; int8 activation scales then depend on that text
    alone): the fp32 export where the CPU has no bf16, or its int8 copy. `load` opens the int8 copy, which is
    not held to the fp32 probes (its vectors are within ~.025 cosine, not 1e-4)."""

    @classmethod
    def load(cls, model: Any, path: Path, *, threads: int) -> PassageEncoder:
        """Raises ExportUnavailable when the quantised file is missing."""
        if not mean_pooled(model):
            raise ExportUnavailable("the model's pooling is not plain mean pooling")
        if not path.exists():
            raise ExportUnavailable(f"no int8 model at {path} (run `manage.py export_query_model`)")
        return cls(session_open(path, threads=threads), model.tokenizer, model.max_seq_length)
