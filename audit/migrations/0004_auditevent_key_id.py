from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_triggers_enable_always")]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="key_id",
            field=models.CharField(
                blank=True,
                default="",
                help_text="id of the audit key that signed it ('' for unkeyed legacy events)",
                max_length=40,
            ),
            preserve_default=False,
        ),
    ]
