from django.db import migrations

# PostgreSQL looks a table name up in the session's own temporary tables first, unless the search path names
# pg_temp later: a session that created a temporary table named knowledge_retiredgroup (empty) made the check of
# 0017 read it instead, and gave a retired id back to a group, the application role included. The check's
# function looks its tables up in the schema it was migrated in, the session's temporary tables last.
PINNED = """
DO $$
BEGIN
    EXECUTE format(
        'ALTER FUNCTION knowledge_group_id_not_retired() SET search_path = %I, pg_temp', current_schema()
    );
END;
$$;
"""
UNPINNED = "ALTER FUNCTION knowledge_group_id_not_retired() RESET search_path;"


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0019_retired_group_check_after_insert")]

    operations = [migrations.RunSQL(PINNED, UNPINNED)]
