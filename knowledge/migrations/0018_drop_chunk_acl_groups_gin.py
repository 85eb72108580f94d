from django.contrib.postgres.operations import RemoveIndexConcurrently
from django.db import migrations

# The GIN index on the chunks' copy of their groups served no search: every statement that checks the ACL starts
# from chunk ids, the HNSW graph, postings or a document (EXPLAIN of the dense, BM25 and graph sources for askers
# in 2, 5-15 and 300 groups at 40k chunks: tests/benchmarks/acl_scale.py --plans), and an asker in more than 16
# groups is checked with `unnest`, which no index serves. It cost every write of a chunk (about 1 ms a row for a
# document shared with 500 groups) and 38 MB at 40k chunks. Dropped without locking the table against searches.


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("knowledge", "0017_retired_group")]

    operations = [RemoveIndexConcurrently(model_name="chunk", name="chunk_acl_groups_gin")]
