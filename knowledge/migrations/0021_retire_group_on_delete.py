from django.db import migrations

# A group's id was retired by the application when Django deleted the group (knowledge.apps, post_delete): a
# group deleted by SQL (a script, a database shell) left its id unretired, free to be written again (an explicit
# id) while chunks still carried it. The database retires the id of every group row deleted, whoever deletes it;
# the application's record of it then finds the row there.
RETIRE_ON_DELETE = """
CREATE OR REPLACE FUNCTION knowledge_group_retire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO knowledge_retiredgroup (group_id, name, retired_at) VALUES (OLD.id, OLD.name, now())
        ON CONFLICT (group_id) DO NOTHING;
    RETURN NULL;
END;
$$;
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION knowledge_group_retire() SET search_path = %I, pg_temp', current_schema());
END;
$$;
CREATE TRIGGER auth_group_retire_on_delete AFTER DELETE ON auth_group
    FOR EACH ROW EXECUTE FUNCTION knowledge_group_retire();
"""
DROP_RETIRE_ON_DELETE = """
DROP TRIGGER IF EXISTS auth_group_retire_on_delete ON auth_group;
DROP FUNCTION IF EXISTS knowledge_group_retire();
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0020_retired_group_check_search_path")]

    operations = [migrations.RunSQL(RETIRE_ON_DELETE, DROP_RETIRE_ON_DELETE)]
