"""`reembed` and the upgrade check `make run` does with it: vectors of another model are rebuilt, with the
sentence vectors pooled from the same pass, against the real PostgreSQL and embedder."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command

from knowledge.embedders import get_embedder, span_vectors_unpack
from knowledge.models import EMBEDDING_DIM, Chunk
from knowledge.services import IngestOptions, embedding_models_stale, files_ingest, folder_scan
from knowledge.text import passage_sentences

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.django_db(transaction=True)
def test_vectors_of_another_model_are_found_and_rebuilt_with_their_sentence_vectors(small_corpus):
    summary = files_ingest(
        root=str(small_corpus), files=list(folder_scan(small_corpus)), options=IngestOptions()
    )
    assert summary.failed == 0 and embedding_models_stale() == []
    fresh = {c.pk: np.asarray(c.embedding) for c in Chunk.objects.all()}

    # an index from before the upgrade: the former int8 default's name, no sentence vectors
    Chunk.objects.update(embedding_model="all-MiniLM-L6-v2+int8", sentence_vectors=None)
    assert embedding_models_stale() == ["all-MiniLM-L6-v2+int8"]

    call_command("reembed")
    assert embedding_models_stale() == []
    for chunk in Chunk.objects.select_related("document"):
        assert chunk.embedding_model == get_embedder().name
        assert float(np.asarray(chunk.embedding) @ fresh[chunk.pk]) > 0.999  # the same model's vector again
        stored = span_vectors_unpack(bytes(chunk.sentence_vectors), EMBEDDING_DIM)
        assert len(stored.tokens) == len(passage_sentences(chunk.text, chunk.document.title))
