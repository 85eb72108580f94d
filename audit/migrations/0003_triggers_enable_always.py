from django.db import migrations

# ENABLE ALWAYS: the append-only triggers fire even in a session with session_replication_role = replica
# (which would otherwise skip ordinary triggers); only the table owner can change this again.
TRIGGERS = ("audit_no_update", "audit_no_delete", "audit_no_truncate")
ALWAYS = "\n".join(f"ALTER TABLE audit_auditevent ENABLE ALWAYS TRIGGER {name};" for name in TRIGGERS)
ORIGIN = "\n".join(f"ALTER TABLE audit_auditevent ENABLE TRIGGER {name};" for name in TRIGGERS)


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only")]

    operations = [migrations.RunSQL(ALWAYS, ORIGIN)]
