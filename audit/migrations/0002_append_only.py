from django.db import migrations

# The database itself refuses to rewrite history, whatever the application code does.
APPEND_ONLY = r"""
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The one exception: the test runner empties test databases between tests (Django's flush).
    IF TG_OP = 'TRUNCATE' AND current_database() LIKE 'test\_%' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit_auditevent is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
"""

DROP = """
DROP TRIGGER IF EXISTS audit_no_update ON audit_auditevent;
DROP TRIGGER IF EXISTS audit_no_delete ON audit_auditevent;
DROP TRIGGER IF EXISTS audit_no_truncate ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_refuse_change();
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunSQL(APPEND_ONLY, DROP)]
