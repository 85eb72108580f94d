from django.db import migrations, models

# The ACL check on a chunk id stays an index-only scan with the expiry in it (0015's column). Built and dropped
# concurrently, outside a transaction: a plain CREATE/DROP INDEX would block every retrieval on knowledge_chunk
# (300k+ rows) while the index is built. The new index has its own name, so the old one serves until it is
# ready.
#
# A migrate stopped midway (the build takes minutes at that size) is finished by the next one, with no hand work:
# PostgreSQL leaves an INVALID index of the new name behind, and Django records the migration only at its end, so
# the next run meets whatever was done. Both steps tolerate that: the new name is dropped first (an invalid index,
# or a finished one whose old index was not dropped yet, is built again), and the old one is dropped only if it is
# still there. State and a fresh database end as AddIndexConcurrently/RemoveIndexConcurrently left them.

NEW_INDEX = models.Index(
    fields=["id"],
    include=["active", "acl_open", "acl_groups", "owner_id_acl", "expires_at", "document_id"],
    name="chunk_acl_expiry_cover",
)
CREATE_NEW = (
    "CREATE INDEX CONCURRENTLY chunk_acl_expiry_cover ON knowledge_chunk (id) "
    "INCLUDE (active, acl_open, acl_groups, owner_id_acl, expires_at, document_id)"
)
CREATE_OLD = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS chunk_acl_cover ON knowledge_chunk (id) "
    "INCLUDE (active, acl_open, acl_groups, owner_id_acl, document_id)"
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("knowledge", "0015_chunk_expires_at")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    ["DROP INDEX CONCURRENTLY IF EXISTS chunk_acl_expiry_cover", CREATE_NEW],
                    reverse_sql="DROP INDEX CONCURRENTLY IF EXISTS chunk_acl_expiry_cover",
                ),
            ],
            state_operations=[migrations.AddIndex(model_name="chunk", index=NEW_INDEX)],
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "DROP INDEX CONCURRENTLY IF EXISTS chunk_acl_cover",
                    reverse_sql=CREATE_OLD,
                ),
            ],
            state_operations=[migrations.RemoveIndex(model_name="chunk", name="chunk_acl_cover")],
        ),
    ]
