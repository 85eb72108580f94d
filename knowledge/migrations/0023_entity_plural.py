from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0022_group_id_drawn_past_retired"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="entity",
            options={"verbose_name_plural": "entities"},
        ),
    ]
