from django.db import migrations, models

# The document's expiry copied onto its chunks, as its ACL is, so that every retrieval source and the citation
# viewer hide an expired document's chunks inside their scan (an expired document is readable by nobody).
COPY_EXPIRY_SQL = """
    UPDATE knowledge_chunk c SET expires_at = d.expires_at
    FROM knowledge_document d WHERE d.id = c.document_id AND d.expires_at IS NOT NULL
"""

# Every write of a document's expiry reaches its chunks in the same statement, whoever writes it: the upload
# API renews an upload's expiry on the document row when the same file comes again (unchanged content is not
# indexed again), and an admin may set it. A chunk with a stale expiry would keep an expired document readable,
# or hide a renewed upload from its owner.
EXPIRY_TO_CHUNKS = """
CREATE OR REPLACE FUNCTION knowledge_document_expiry_to_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE knowledge_chunk SET expires_at = NEW.expires_at
    WHERE document_id = NEW.id AND expires_at IS DISTINCT FROM NEW.expires_at;
    RETURN NULL;
END;
$$;
CREATE TRIGGER document_expiry_to_chunks AFTER UPDATE OF expires_at ON knowledge_document
    FOR EACH ROW WHEN (OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION knowledge_document_expiry_to_chunks();
"""
DROP_EXPIRY_TO_CHUNKS = """
DROP TRIGGER IF EXISTS document_expiry_to_chunks ON knowledge_document;
DROP FUNCTION IF EXISTS knowledge_document_expiry_to_chunks();
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0014_deleting_keeps_records")]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(COPY_EXPIRY_SQL, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(EXPIRY_TO_CHUNKS, DROP_EXPIRY_TO_CHUNKS),
        # the covering index with the expiry in it is built without locking the table: 0016
    ]
