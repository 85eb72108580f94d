import django.db.models.deletion
from django.db import migrations, models

# The postings table is created by hand: its primary key is (term, chunk_id) with the scoring columns
# INCLUDEd, so that BM25 over a term is an index-only scan (Django cannot declare INCLUDE on a primary key).
POSTINGS = """
CREATE TABLE knowledge_posting (
    term     varchar(200) NOT NULL,
    chunk_id bigint NOT NULL REFERENCES knowledge_chunk(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    tf       integer NOT NULL,
    doc_len  integer NOT NULL,
    CONSTRAINT knowledge_posting_pkey PRIMARY KEY (term, chunk_id) INCLUDE (tf, doc_len),
    CONSTRAINT knowledge_posting_tf_check CHECK (tf >= 0),
    CONSTRAINT knowledge_posting_doc_len_check CHECK (doc_len >= 0)
);
CREATE INDEX knowledge_posting_chunk ON knowledge_posting (chunk_id);
INSERT INTO knowledge_corpusstat (id, n_chunks, total_len) VALUES (1, 0, 0) ON CONFLICT DO NOTHING;
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(POSTINGS, "DROP TABLE knowledge_posting;")],
            state_operations=[
                migrations.CreateModel(
                    name="Posting",
                    fields=[
                        ("pk", models.CompositePrimaryKey("term", "chunk", blank=True, editable=False,
                                                          primary_key=True, serialize=False)),
                        ("term", models.CharField(max_length=200)),
                        ("chunk", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                    related_name="+", to="knowledge.chunk")),
                        ("tf", models.PositiveIntegerField()),
                        ("doc_len", models.PositiveIntegerField()),
                    ],
                    options={"db_table": "knowledge_posting"},
                ),
            ],
        ),
    ]
