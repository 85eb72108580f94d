from django.db import migrations

# Impact-ordered access paths for large corpora (retrieval/stages.py):
# - postings by (term, BM25 term-frequency component at k1=1.2, b=0.75, avgdl=64) descending, so the best
#   postings of a term come first (64: close to the ~70 of real documentation chunks); the expression must stay identical to stages.IMPACT_EXPR;
# - mentions by (entity, count) descending, so the graph source reads an entity's strongest mentions first.
IMPACT = (
    "(tf * 2.2::float8 / (tf + 1.2::float8 * (0.25::float8 + 0.75::float8 * doc_len / 64.0::float8)))"
)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0003_termstat_trigram")]

    operations = [
        migrations.RunSQL(
            f"CREATE INDEX IF NOT EXISTS knowledge_posting_impact ON knowledge_posting "
            f"(term, {IMPACT} DESC) INCLUDE (chunk_id, tf, doc_len)",
            "DROP INDEX IF EXISTS knowledge_posting_impact",
        ),
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS knowledge_mention_strength ON knowledge_mention "
            "(entity_id, count DESC, chunk_id)",
            "DROP INDEX IF EXISTS knowledge_mention_strength",
        ),
    ]
