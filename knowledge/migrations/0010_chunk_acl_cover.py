from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0009_chunk_sentence_vectors")]

    operations = [
        migrations.AddIndex(
            model_name="chunk",
            index=models.Index(
                fields=["id"],
                include=["active", "acl_open", "acl_groups", "owner_id_acl", "document_id"],
                name="chunk_acl_cover",
            ),
        ),
    ]
