from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0008_analyzer_version_help_text")]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="sentence_vectors",
            field=models.BinaryField(blank=True, editable=False, null=True),
        ),
    ]
