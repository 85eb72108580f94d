# The compliance search's text (audit.selectors.audit_event_search, `payload__icontains`) read every payload:
# 12-13 s per statement at 300k question events (1.1 GiB with TOAST), and the API and the page ran two (count and
# page). A trigram GIN index on the very expression the lookup compares, UPPER(payload::text), gives the events
# that may hold the text, and only those are read: a phrase 12 events hold in 41 ms, a word none holds in 1 ms. A
# word that many events hold is still counted by reading each of them (2.9 s at 64k). The index takes about
# 2.1 KiB an event (625 MiB at 300k) and each audit_record about 1 ms more, and one write in a hundred or so
# also merges GIN's pending list into it (50-180 ms, under the chain's lock): tests/benchmarks/audit_search.py,
# tests/benchmarks/README.md.
#
# Built concurrently, outside a transaction: a plain CREATE INDEX would hold back every audit write, and so every
# question, for the minutes the build takes (3.5 min at 300k events). A migrate stopped midway leaves an INVALID
# index of that name, which the next one drops and builds again. pg_trgm is created here too (knowledge's first
# migration also creates it, and may run after this one on an empty database); it is left in place on the way back.

from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import migrations, models
from django.db.models.functions import Cast, Upper

CREATE = [
    "SET maintenance_work_mem = '256MB'",
    "DROP INDEX CONCURRENTLY IF EXISTS audit_payload_trgm",
    "CREATE INDEX CONCURRENTLY audit_payload_trgm ON audit_auditevent USING gin ((UPPER((payload)::text)) gin_trgm_ops)",
    "RESET maintenance_work_mem",
]


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("audit", "0004_auditevent_key_id")]

    operations = [
        migrations.RunSQL("CREATE EXTENSION IF NOT EXISTS pg_trgm", migrations.RunSQL.noop),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(CREATE, reverse_sql="DROP INDEX CONCURRENTLY IF EXISTS audit_payload_trgm")
            ],
            state_operations=[
                migrations.AddIndex(
                    model_name="auditevent",
                    index=GinIndex(
                        OpClass(Upper(Cast("payload", models.TextField())), name="gin_trgm_ops"),
                        name="audit_payload_trgm",
                    ),
                )
            ],
        ),
    ]
