from django.db import migrations

# 0017 checked a group's id against the retired ones BEFORE the row was written: an id written while its group's
# delete was still open (an explicit id: loaddata, SQL) saw no retired row yet, then waited on the deleted row's
# key and, once the delete committed, took the id back, and with it the chunks still carrying it. Checked AFTER
# the row is written, the check runs once that wait is over and reads the retired id the delete committed.
RETIRED_ID_CHECKED_AFTER = """
DROP TRIGGER IF EXISTS auth_group_id_not_retired ON auth_group;
CREATE TRIGGER auth_group_id_not_retired AFTER INSERT OR UPDATE OF id ON auth_group
    FOR EACH ROW EXECUTE FUNCTION knowledge_group_id_not_retired();
"""
RETIRED_ID_CHECKED_BEFORE = """
DROP TRIGGER IF EXISTS auth_group_id_not_retired ON auth_group;
CREATE TRIGGER auth_group_id_not_retired BEFORE INSERT OR UPDATE OF id ON auth_group
    FOR EACH ROW EXECUTE FUNCTION knowledge_group_id_not_retired();
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0018_drop_chunk_acl_groups_gin")]

    operations = [migrations.RunSQL(RETIRED_ID_CHECKED_AFTER, RETIRED_ID_CHECKED_BEFORE)]
