# ef_construction 64 -> 256 (knowledge/models.py HNSW_EF_CONSTRUCTION). The new graph is built beside the old one
# (CREATE INDEX CONCURRENTLY: searches go on meanwhile, using the old graph), then takes its name; the build is
# about four times one at 64 (seconds at 17k chunks, minutes at 300k; tests/benchmarks/README.md). Its session
# gets 1GB of maintenance memory so that the graph of a large knowledge base fits while it is built.

import pgvector.django.indexes
from django.db import migrations


def _rebuild(ef_construction: int) -> list[str]:
    return [
        "SET maintenance_work_mem = '1GB'",
        "DROP INDEX CONCURRENTLY IF EXISTS chunk_embedding_hnsw_rebuilt",
        "CREATE INDEX CONCURRENTLY chunk_embedding_hnsw_rebuilt ON knowledge_chunk "
        f"USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = {ef_construction})",
        "DROP INDEX CONCURRENTLY IF EXISTS chunk_embedding_hnsw",
        "ALTER INDEX chunk_embedding_hnsw_rebuilt RENAME TO chunk_embedding_hnsw",
        "RESET maintenance_work_mem",
    ]


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('knowledge', '0012_chunk_code_lines'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(_rebuild(256), reverse_sql=_rebuild(64))],
            state_operations=[
                migrations.RemoveIndex(
                    model_name='chunk',
                    name='chunk_embedding_hnsw',
                ),
                migrations.AddIndex(
                    model_name='chunk',
                    index=pgvector.django.indexes.HnswIndex(ef_construction=256, fields=['embedding'], m=16, name='chunk_embedding_hnsw', opclasses=['vector_cosine_ops']),
                ),
            ],
        ),
    ]
