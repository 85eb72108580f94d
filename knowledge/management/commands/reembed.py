"""`python manage.py reembed [--batch-size N]` — rebuild every chunk embedding, and the sentence vectors pooled
from the same pass, with the configured embedder.

The vector column's dimension follows ATHENA_EMBEDDING_DIM; when it differs from the column, the column and
its HNSW index are recreated first. Vectors from two models are never compared: until this reaches a chunk, dense
search leaves it out (its vectors carry another model's name; retrieval.stages.dense_search), and BM25 and the
graph still find it."""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections, transaction

from athena.cli import positive_int
from knowledge.indexing import embedding_input, embedding_key
from knowledge.models import HNSW_INDEX_SQL, Chunk


class Command(BaseCommand):
    help = "Re-embed all chunks with the configured embedder (recreating the vector column if needed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size", type=positive_int, default=512, help="chunks per batch (default 512)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from tqdm import tqdm

        from knowledge.embedders import get_embedder, passages_embed

        embedder = get_embedder()
        embedder.warm_up()
        # schema changes go through the owner role (athena/db_roles.py); the data through the application's
        owner = "owner" if "owner" in settings.DATABASES else "default"
        with connections[owner].cursor() as cursor:
            cursor.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'knowledge_chunk'::regclass AND attname = 'embedding'"
            )
            current = cursor.fetchone()[0]
            wanted = f"vector({embedder.dimension})"
            if current != wanted:
                self.stdout.write(f"changing embedding column {current} -> {wanted}")
                with transaction.atomic(using=owner):
                    cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
                    cursor.execute(
                        f"ALTER TABLE knowledge_chunk ALTER COLUMN embedding TYPE {wanted} USING NULL"
                    )
        ids = list(Chunk.objects.order_by("id").values_list("id", flat=True))
        with tqdm(total=len(ids), unit="chunk", file=sys.stderr, disable=None) as bar:
            for start in range(0, len(ids), options["batch_size"]):
                batch = list(
                    Chunk.objects.filter(id__in=ids[start : start + options["batch_size"]])
                    .select_related("document")
                    .order_by("id")
                )
                inputs = [embedding_input(c.document.title, c.section_path, c.text) for c in batch]
                vectors, packed = passages_embed(embedder, inputs)
                for chunk, vector, sentence_vectors, (text, spans) in zip(
                    batch, vectors, packed, inputs, strict=True
                ):
                    chunk.embedding = vector
                    chunk.sentence_vectors = sentence_vectors
                    chunk.embedding_model = embedder.name
                    chunk.embedding_key = embedding_key(embedder.name, text, spans)
                Chunk.objects.bulk_update(
                    batch, ["embedding", "sentence_vectors", "embedding_model", "embedding_key"]
                )
                bar.update(len(batch))
        with connections[owner].cursor() as cursor:
            cursor.execute(HNSW_INDEX_SQL)
        self.stdout.write(f"re-embedded {len(ids)} chunk(s) with {embedder.name}")
