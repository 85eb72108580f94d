from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

# The ACL check on a chunk id stays an index-only scan with the expiry in it (0015's column). Built and dropped
# concurrently, outside a transaction: a plain CREATE/DROP INDEX would block every retrieval on knowledge_chunk
# (300k+ rows) while the index is built. The new index has its own name, so the old one serves until it is
# ready. A build interrupted midway leaves an INVALID index of that name: drop it before migrating again.


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("knowledge", "0015_chunk_expires_at")]

    operations = [
        AddIndexConcurrently(
            model_name="chunk",
            index=models.Index(
                fields=["id"],
                include=["active", "acl_open", "acl_groups", "owner_id_acl", "expires_at", "document_id"],
                name="chunk_acl_expiry_cover",
            ),
        ),
        RemoveIndexConcurrently(model_name="chunk", name="chunk_acl_cover"),
    ]
