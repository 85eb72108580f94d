"""The question encoder on ONNX Runtime (knowledge.onnx_query): exported from the packaged weights, checked
against torch before use, and refused or skipped when it would not embed as torch does."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.slow]

QUESTIONS = [
    "What is the default BGP keepalive?",
    "steps to fail over the DNS primary",
    "Which `ss` option (-K / --kill) closes sockets, and what does it print for sockets it skips?",
    "x",
    "routing table 254 " * 60,  # longer than the model's 256-token window: truncated as torch truncates
]


@pytest.fixture
def export_dir(tmp_path, monkeypatch):
    """Exports go to a folder of this test's own, so the install-time export is neither used nor touched."""
    import knowledge.onnx_query

    monkeypatch.setattr(knowledge.onnx_query, "EXPORT_DIR", tmp_path)
    return tmp_path


def test_an_exported_encoder_embeds_questions_as_torch_does(export_dir):
    from knowledge.embedders import MiniLMEmbedder

    torch_only = MiniLMEmbedder(precision="fp32", query_runtime="torch")
    exporter = MiniLMEmbedder(precision="fp32")
    path = exporter.query_export()
    assert path.parent == export_dir and path.stat().st_size > 1_000_000
    assert exporter.query_export() == path  # exported once; a second call keeps the file
    onnx = MiniLMEmbedder(query_runtime="onnx")
    assert onnx.query_runtime_used == "onnx" and torch_only.query_runtime_used == "torch"
    for question in QUESTIONS:
        a, b = onnx.embed_query(question), torch_only.embed_query(question)
        assert a.dtype == np.float32 and a.shape == (384,)
        assert float(a @ b) > 0.9999
    assert not list(export_dir.glob(".*partial"))


def test_without_an_export_auto_falls_back_to_torch_and_onnx_refuses_to_start(export_dir):
    from knowledge.embedders import MiniLMEmbedder
    from knowledge.onnx_query import ExportUnavailable

    auto = MiniLMEmbedder(precision="fp32")
    assert auto.query_runtime_used == "torch"
    assert auto.embed_query(QUESTIONS[0]).shape == (384,)
    with pytest.raises(ExportUnavailable, match="no ONNX export"):
        MiniLMEmbedder(query_runtime="onnx").warm_up()


def test_an_export_of_other_weights_is_refused_by_the_probe_check(export_dir):
    """A file under the model's name that embeds differently (here: the same graph with one layer's weights
    changed) fails the probe comparison instead of silently querying another vector space."""
    import torch
    from sentence_transformers import SentenceTransformer

    from knowledge.embedders import MiniLMEmbedder
    from knowledge.onnx_query import ExportUnavailable, export, export_path

    embedder = MiniLMEmbedder(precision="fp32")
    other = SentenceTransformer(embedder.model_ref, device="cpu", local_files_only=True)
    with torch.no_grad():
        other[0].auto_model.encoder.layer[0].output.dense.weight.mul_(1.5)
    export(other, export_path(embedder.model_ref))
    assert MiniLMEmbedder(precision="fp32").query_runtime_used == "torch"
    with pytest.raises(ExportUnavailable, match="cosine"):
        MiniLMEmbedder(precision="fp32", query_runtime="onnx").warm_up()


def test_the_int8_passage_model_is_quantised_from_the_export_and_questions_stay_fp32(export_dir):
    """`query_export` (install time) also writes the int8 passage model; an int8 index is queried with fp32
    question vectors (dense MRR@10 on the dev set .827 against .820 for fp32 passages: tests/benchmarks)."""
    from knowledge.embedders import MiniLMEmbedder
    from knowledge.onnx_query import export_path, int8_path

    fp32 = MiniLMEmbedder(precision="fp32")
    source = fp32.query_export()
    assert int8_path(source).exists() and int8_path(source).stat().st_size < source.stat().st_size / 2
    assert source == export_path(fp32.model_ref)
    int8 = MiniLMEmbedder(precision="int8")
    assert int8.query_runtime_used == "onnx"
    for question in QUESTIONS[:3]:
        assert float(int8.embed_query(question) @ fp32.embed_query(question)) > 0.9999
    passages = int8.embed_passages(QUESTIONS[:3])
    reference = fp32.embed_passages(QUESTIONS[:3])
    cosines = np.sum(passages * reference, axis=1)
    assert np.all(cosines > 0.95) and np.all(cosines < 0.99999)  # close to fp32, and really int8


def test_an_int8_embedder_without_the_install_time_model_quantises_it_itself(export_dir):
    from knowledge.embedders import MiniLMEmbedder
    from knowledge.onnx_query import export_path, int8_path

    int8 = MiniLMEmbedder(precision="int8")
    vector = int8.embed_passages(["a passage about keepalive timers"])[0]
    assert int8_path(export_path(int8.model_ref)).exists()
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_only_mean_pooled_models_are_exported(export_dir):
    from sentence_transformers import SentenceTransformer, models

    from knowledge.embedders import MiniLMEmbedder
    from knowledge.onnx_query import ExportUnavailable, export, mean_pooled

    model = SentenceTransformer(MiniLMEmbedder().model_ref, device="cpu", local_files_only=True)
    assert mean_pooled(model)
    cls = SentenceTransformer(modules=[model[0], models.Pooling(384, pooling_mode="cls")], device="cpu")
    assert not mean_pooled(cls)
    with pytest.raises(ExportUnavailable):
        export(cls, export_dir / "cls.onnx")


def test_fp32_passages_through_the_export_are_torchs_vectors_and_sentence_vectors(export_dir):
    """Where the CPU has no bf16, fp32 passages run one at a time through the verified export instead of
    torch's padded batches (1.36x on an AVX2 CPU): the same vectors, so the index and answers do not change."""
    from knowledge.embedders import MiniLMEmbedder

    MiniLMEmbedder(precision="fp32").query_export()
    onnx = MiniLMEmbedder(precision="fp32")
    torch_only = MiniLMEmbedder(precision="fp32", query_runtime="torch")
    texts = [*QUESTIONS, "Title > Section\nThe first sentence. The second one, a little longer, ends here."]
    spans = [[(0, min(5, len(t))), None, (0, len(t))] for t in texts]
    vectors, pooled = onnx.embed_passages_pooled(texts, spans)
    expected, expected_pooled = torch_only.embed_passages_pooled(texts, spans)
    assert onnx._passage_encoder is not None and torch_only._passage_encoder is None
    assert np.min(np.sum(vectors * expected, axis=1)) > 0.9999
    assert np.allclose(onnx.embed_passages(texts), vectors, atol=1e-6)
    for got, want in zip(pooled, expected_pooled, strict=True):
        assert list(got.tokens) == list(want.tokens)
        for a, b, n in zip(got.means, want.means, got.tokens, strict=True):
            if n:
                assert float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) > 0.9999
    assert onnx.name == torch_only.name == "all-MiniLM-L6-v2"
