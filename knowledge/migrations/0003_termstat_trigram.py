from django.db import migrations


class Migration(migrations.Migration):
    """Trigram index on the BM25 vocabulary: query understanding looks up near spellings of unknown terms."""

    dependencies = [("knowledge", "0002_bm25_tables")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS knowledge_termstat_trgm ON knowledge_termstat USING gin (term gin_trgm_ops)",
            "DROP INDEX IF EXISTS knowledge_termstat_trgm",
        )
    ]
