# Posting blocks (knowledge.models.PostingBlock): BM25 reads a term's postings as a few packed rows.
# Stored uncompressed (STORAGE EXTERNAL): reading them is then a copy, and packed integers compress poorly.
# Existing postings are packed here; the impact-ordered postings index of 0004 served the previous
# large-corpus scorer and is dropped (it cost a fifth of ingestion's index writes).

from django.db import migrations, models

REPACK = """
    INSERT INTO knowledge_postingblock (term, level, n, postings)
    SELECT term, 30, count(*),
           string_agg(int8send(chunk_id) || int4send(tf) || int4send(doc_len), ''::bytea ORDER BY chunk_id)
    FROM knowledge_posting GROUP BY term
"""
IMPACT = (
    "(tf * 2.2::float8 / (tf + 1.2::float8 * (0.25::float8 + 0.75::float8 * doc_len / 64.0::float8)))"
)


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0004_impact_ordered_postings'),
    ]

    operations = [
        migrations.CreateModel(
            name='PostingBlock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('term', models.CharField(max_length=200)),
                ('level', models.SmallIntegerField(default=0)),
                ('n', models.PositiveIntegerField(help_text='postings in this block')),
                ('postings', models.BinaryField()),
            ],
            options={
                'db_table': 'knowledge_postingblock',
                'indexes': [models.Index(fields=['term', 'level'], name='knowledge_postingblock_term')],
            },
        ),
        migrations.RunSQL(
            "ALTER TABLE knowledge_postingblock ALTER COLUMN postings SET STORAGE EXTERNAL",
            migrations.RunSQL.noop,
        ),
        migrations.RunSQL(REPACK, "DELETE FROM knowledge_postingblock"),
        migrations.RunSQL(
            "DROP INDEX IF EXISTS knowledge_posting_impact",
            f"CREATE INDEX IF NOT EXISTS knowledge_posting_impact ON knowledge_posting "
            f"(term, {IMPACT} DESC) INCLUDE (chunk_id, tf, doc_len)",
        ),
    ]
