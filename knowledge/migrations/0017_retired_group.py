from django.db import migrations, models

# A deleted group's id may stay in its documents' chunks' ACL copies (knowledge.models.RetiredGroup): the
# database refuses that id to any group created or renumbered later, whoever writes the row (the admin, an
# explicit id from loaddata, a sequence set back to the highest id). unique_violation: Django raises
# IntegrityError, as for any other id that is taken.
RETIRED_ID_REFUSED = """
CREATE OR REPLACE FUNCTION knowledge_group_id_not_retired() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM knowledge_retiredgroup WHERE group_id = NEW.id) THEN
        RAISE EXCEPTION 'group id % belonged to a deleted group and is never given again', NEW.id
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER auth_group_id_not_retired BEFORE INSERT OR UPDATE OF id ON auth_group
    FOR EACH ROW EXECUTE FUNCTION knowledge_group_id_not_retired();
"""
DROP_RETIRED_ID_REFUSED = """
DROP TRIGGER IF EXISTS auth_group_id_not_retired ON auth_group;
DROP FUNCTION IF EXISTS knowledge_group_id_not_retired();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("knowledge", "0016_chunk_acl_expiry_cover"),
    ]

    operations = [
        migrations.CreateModel(
            name="RetiredGroup",
            fields=[
                ("group_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=150)),
                ("retired_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.RunSQL(RETIRED_ID_REFUSED, DROP_RETIRED_ID_REFUSED),
    ]
