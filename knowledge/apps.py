from typing import Any

from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.models import Group
        from django.db.models.signals import post_delete, pre_delete

        from athena.db_roles import append_only_table_register, maintained_table_register
        from knowledge.indexing import INDEX_TABLES
        from knowledge.models import RetiredGroup

        # a retired group id stays retired: the application may record one, never take one back (the id may
        # still be in chunks' ACL copies; see RetiredGroup)
        append_only_table_register(RetiredGroup._meta.db_table)

        # an ingest ANALYZEs the index tables it rewrote (knowledge.indexing.index_statistics_refresh)
        for table in INDEX_TABLES:
            maintained_table_register(table)

        # A signal, against the house rule, because a Group is deleted by Django admin (or any code) without
        # passing through a service of ours; the rule itself lives in knowledge.services.
        pre_delete.connect(_group_pre_delete, sender=Group, dispatch_uid="knowledge_group_pre_delete")
        post_delete.connect(_group_post_delete, sender=Group, dispatch_uid="knowledge_group_post_delete")


def _group_pre_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    from knowledge.services import group_delete_documents

    instance._athena_group_documents = group_delete_documents(group=instance)


def _group_post_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    # after the delete statements of the whole batch: the documents' rows of every group deleted with this
    # one are gone, so a document left with none of its groups is seen as such
    from knowledge.services import group_deleted_close_documents

    group_deleted_close_documents(
        group_id=instance.pk,
        group_name=instance.name,
        document_ids=getattr(instance, "_athena_group_documents", []),
    )
