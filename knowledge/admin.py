from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IS_POPUP_VAR
from django.contrib.admin.widgets import ForeignKeyRawIdWidget
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest, HttpResponse
from django.utils.text import capfirst

from athena.admin import (
    JSON_FORM_FIELDS,
    LargeTableAdmin,
    NamedValuesListFilter,
    ReadOnlyAdmin,
    choices_list_filter,
    name_typed_list_filter,
)
from athena.errors import Unavailable
from knowledge.models import (
    MAX_DOCUMENT_GROUPS,
    AccessTier,
    Chunk,
    Document,
    DocumentLink,
    DocumentStatus,
    Entity,
    EntityKind,
    IngestRun,
    Synonym,
    Vendor,
)


def readable_document_ids(request: HttpRequest) -> Any:
    """The ids of the documents the signed-in admin may read (a subquery): being staff grants no read access.
    Expired ones are included (readers see them nowhere): an admin whose groups may read one renews or clears
    its expiry here (DocumentAdmin.save_model)."""
    from athena.principals import Principal
    from knowledge.selectors import documents_readable

    return documents_readable(principal=Principal.from_user(request.user), include_expired=True).values("pk")


def readable_document_flag(request: HttpRequest, field: str) -> Exists:
    """An annotation for a queryset of another model: whether its document `field` is one the admin may read."""
    return Exists(Document.objects.filter(pk=OuterRef(field), pk__in=readable_document_ids(request)))


UNREADABLE_DOCUMENT = "a document you cannot read (not named here; an admin in its groups can change this)"


DELETED_MEANWHILE = "This document was deleted by someone else since this page was opened."


class DocumentChoicesForm(forms.ModelForm):
    """The form of a ReadableDocumentChoices admin: a document picked in one of its `document_choice_fields` is
    held against deletion until the admin's request commits (the admin's change view runs in one transaction),
    and one deleted since the page was opened is a form error: the row used to be saved pointing at it and
    fail at commit (a server error)."""

    document_choice_fields: tuple[str, ...] = ()

    def clean(self) -> dict[str, Any]:
        from knowledge.services import document_lock_for_reference

        cleaned = super().clean() or {}
        for name in self.document_choice_fields:
            chosen = cleaned.get(name)
            if chosen is None or name not in self.changed_data:
                continue
            if not document_lock_for_reference(document_id=chosen.pk):
                self.add_error(name, DELETED_MEANWHILE)
        return cleaned


class ReadableDocumentIdWidget(ForeignKeyRawIdWidget):
    """The id box of a document field: beside the id it names the document only when it is one of the
    field's choices. Django's widget names whatever document the id is, so an admin who typed the id of one
    they cannot read would see its title beside the form's error."""

    def __init__(self, *args: Any, queryset: QuerySet[Document], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queryset = queryset

    def label_and_url_for_value(self, value: Any) -> tuple[str, str]:
        try:
            offered = self.queryset.filter(pk=value).exists()
        except (ValueError, TypeError, ValidationError):
            return "", ""
        return super().label_and_url_for_value(value) if offered else ("", "")


class ReadableDocumentChoices(admin.ModelAdmin):
    """A ModelAdmin whose model points at documents through `document_choice_fields`: the admin picks among the
    documents they may read, and a document they cannot read is neither offered nor named. When the row
    already points at one, the field leaves the form (so saving keeps it) and reads as UNREADABLE_DOCUMENT."""

    document_choice_fields: tuple[str, ...] = ()
    formfield_overrides = JSON_FORM_FIELDS
    form = DocumentChoicesForm

    def _unreadable_choices(self, request: HttpRequest, obj: Any) -> list[str]:
        if obj is None:
            return []
        ids = {name: getattr(obj, f"{name}_id") for name in self.document_choice_fields}
        readable = set(
            Document.objects.filter(pk__in=[i for i in ids.values() if i is not None])
            .filter(pk__in=readable_document_ids(request))
            .values_list("pk", flat=True)
        )
        return [name for name, pk in ids.items() if pk is not None and pk not in readable]

    @staticmethod
    def _choices(request: HttpRequest, current: int | None = None) -> QuerySet[Document]:
        """The documents offered: those the admin may read and that are not removed, and the row's current one
        (only ever a readable one: an unreadable pointer is not in the form), even if it was removed since, so
        that saving another change does not clear it."""
        from knowledge.models import DocumentStatus

        offered = Q(pk__in=readable_document_ids(request)) & ~Q(status=DocumentStatus.TOMBSTONED)
        if current is not None:
            offered |= Q(pk=current)
        return Document.objects.filter(offered).order_by("title", "source")

    def formfield_for_foreignkey(self, db_field, request, **kwargs):  # type: ignore[no-untyped-def]
        if db_field.name in self.document_choice_fields:
            kwargs["queryset"] = self._choices(request)
            if db_field.name in self.raw_id_fields:
                kwargs["widget"] = ReadableDocumentIdWidget(
                    db_field.remote_field,
                    self.admin_site,
                    queryset=kwargs["queryset"],
                    using=kwargs.get("using"),
                )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if issubclass(form, DocumentChoicesForm):
            form.document_choice_fields = self.document_choice_fields
        for name in self.document_choice_fields:
            field = form.base_fields.get(name)
            current = getattr(obj, f"{name}_id", None) if obj is not None else None
            if isinstance(field, ModelChoiceField) and current is not None:
                field.queryset = self._choices(request, current)
                if isinstance(field.widget, ReadableDocumentIdWidget):
                    field.widget.queryset = field.queryset
        return form

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        return [*(super().get_exclude(request, obj) or ()), *self._unreadable_choices(request, obj)]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # each subclass defines `<field>_withheld` (UNREADABLE_DOCUMENT), shown in place of such a field
        hidden = [f"{name}_withheld" for name in self._unreadable_choices(request, obj)]
        return [*super().get_readonly_fields(request, obj), *hidden]


def _access_seen(tier: str, group_ids: Any) -> str:
    return f"{tier}:{','.join(str(pk) for pk in sorted(group_ids))}"


class DocumentAdminForm(DocumentChoicesForm):
    """The document's change form. It carries the access (tier and groups) it was shown with, so that saving
    it writes only the access its admin changed: an ACL set meanwhile (another admin, the ACL API) stays when
    this admin edits something else, and an access edit made over one set meanwhile is refused (the admin
    reloads and decides) rather than one silently replacing the other."""

    access_seen = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None and "access_seen" in self.fields:
            groups = self.instance.allowed_groups.values_list("pk", flat=True)
            self.fields["access_seen"].initial = _access_seen(self.instance.access_tier, groups)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        chosen = cleaned.get("allowed_groups")
        if chosen is not None and len(chosen) > MAX_DOCUMENT_GROUPS:
            # saved, the chunks' copy of the groups would not fit their index (a server error)
            self.add_error(
                "allowed_groups",
                f"A document can be shared with at most {MAX_DOCUMENT_GROUPS} groups, not {len(chosen)}: "
                "share it with fewer, wider groups.",
            )
            return cleaned
        seen = cleaned.get("access_seen") or ""
        if self.instance.pk is None or ":" not in seen:
            self._hold_groups(cleaned)
            return cleaned
        # the row as it is now, locked until the admin's request commits (the admin's change view runs in one
        # transaction): an ACL change through the API waits for this save instead of slipping in before it
        current = Document.objects.select_for_update().filter(pk=self.instance.pk).first()
        if current is None:  # deleted while this form was being sent (the lock waited for the delete)
            raise forms.ValidationError(
                "This document was deleted by someone else since this page was opened."
            )
        current_groups = sorted(current.allowed_groups.values_list("pk", flat=True))
        seen_tier, _, seen_ids = seen.partition(":")
        seen_groups = sorted(int(pk) for pk in seen_ids.split(",") if pk.isdigit())
        conflicts = []
        if "access_tier" in cleaned:
            if cleaned["access_tier"] == seen_tier:
                cleaned["access_tier"] = current.access_tier  # not edited here: as it is now
            elif current.access_tier != seen_tier:
                conflicts.append("access tier")
        if "allowed_groups" in cleaned:
            if sorted(group.pk for group in cleaned["allowed_groups"]) == seen_groups:
                cleaned["allowed_groups"] = current.allowed_groups.all()
            elif current_groups != seen_groups:
                conflicts.append("allowed groups")
        if conflicts:
            raise forms.ValidationError(
                f"The {' and '.join(conflicts)} of this document were changed by someone else since this page "
                "was opened: reload it and make your change again."
            )
        self._hold_groups(cleaned)  # after the document: the order of an admin's group delete (groups_delete)
        return cleaned

    def _hold_groups(self, cleaned: dict[str, Any]) -> None:
        """Hold the groups this admin picked against deletion until the request commits; one deleted since the
        page was opened is a form error (the document used to be saved naming it and fail at commit)."""
        from athena.errors import ApplicationError
        from athena.services import groups_held

        chosen = cleaned.get("allowed_groups")
        if "allowed_groups" not in self.changed_data or not chosen:
            return
        try:
            groups_held(names=[group.name for group in chosen], create=False)
        except ApplicationError as exc:
            details = exc.details or {}
            gone = ", ".join(details.get("unknown") or details.get("deleted") or [])
            self.add_error("allowed_groups", f"Deleted by someone else since this page was opened: {gone}.")


@admin.register(Document)
class DocumentAdmin(ReadableDocumentChoices):
    form = DocumentAdminForm
    list_display = (
        "source",
        "title",
        "doc_type",
        "access_tier",
        "status",
        "version",
        "chunk_count",
        "injection_flags",
        "source_updated_at",
        "review_by",
    )
    list_filter = (
        "status",
        "access_tier",
        "doc_type",
        ("department", NamedValuesListFilter),
        ("vendor", NamedValuesListFilter),
        name_typed_list_filter("allowed_groups__name", "allowed group"),
    )
    search_fields = ("source", "title", "author")
    # a box that searches the groups by name (GET /admin/autocomplete/, for whoever may view groups), not a
    # picker holding every group: 2,000 groups made the change form 1.9 s, and each changelist page carried a
    # filter link per group
    autocomplete_fields = ("allowed_groups",)
    document_choice_fields = ("superseded_by",)
    # an id box with a lookup, not a select of every readable document or every user (10k documents and 3k
    # users made the change form 600 KiB and 10 s); the form still accepts only the documents _choices offers
    raw_id_fields = ("superseded_by", "owner")
    readonly_fields = (
        "content_hash",
        "version",
        "status",
        "error",
        "attempts",
        "ingested_at",
        "chunk_count",
        "injection_flags",
        "source_path",
        "source_root",
        "created_at",
    )
    actions = ["reingest", "tombstone"]

    @admin.display(description="superseded by")
    def superseded_by_withheld(self, obj: Document) -> str:
        return UNREADABLE_DOCUMENT

    def has_add_permission(self, request: HttpRequest) -> bool:
        # a document comes from a file (`manage.py ingest`, a synced folder, an upload): one added here has no
        # source file, so nothing ever indexes it and it read "Pending" for ever after "added successfully"
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        # being staff or a superuser grants no read access: only documents the admin's groups may read are
        # listed (an ACL can still be set on any document through PUT /api/v1/documents/<id>/acl)
        return super().get_queryset(request).filter(pk__in=readable_document_ids(request))

    def save_model(self, request: HttpRequest, obj: Document, form, change: bool) -> None:  # type: ignore[no-untyped-def]
        if not change:
            super().save_model(request, obj, form, change)
            return
        # The form's copy of the row was read when the request came in; an ingest may have committed a new
        # version since (status, version, counts, title). Only the fields the admin changed are written, under
        # the row lock an ingest takes, which is held until the chunks are synced (save_related).
        previous = Document.objects.select_for_update().values_list("expires_at", flat=True).get(pk=obj.pk)
        concrete = {f.name for f in Document._meta.concrete_fields}
        fields = [name for name in form.changed_data if name in concrete]
        if fields:
            obj.save(update_fields=fields)
        if "expires_at" in fields:
            # a document the expiry removed and renewed here is indexed again from its source file
            from knowledge.services import document_expiry_changed

            def queued(unavailable: Unavailable | None) -> None:
                # after the form's transaction committed: the renewal is saved either way
                if unavailable is None:
                    self.message_user(
                        request, "its expiry was renewed: queued for re-ingestion from its source file"
                    )
                    return
                self.message_user(
                    request,
                    "its expiry was renewed, but its re-ingestion could not be queued "
                    f'({unavailable.message}): use the "Re-ingest" action later (a document of a synced '
                    "source folder is also indexed by the next nightly sync)",
                    messages.ERROR,
                )

            document_expiry_changed(document=obj, previous=previous, on_queued=queued)

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:  # type: ignore[no-untyped-def]
        super().save_related(request, form, formsets, change)
        # ACL or metadata edits must reach the denormalised chunk columns used by retrieval at once (the sync
        # reads the row again: form.instance may be stale)
        from knowledge.services import document_acl_sync

        document_acl_sync(document=form.instance, actor=request.user)
        if change and not _readable_to(request, form.instance.pk):
            # saved "successfully", the document then vanished from the admin's list with no word why
            document = Document.objects.get(pk=form.instance.pk)
            nobody = document.access_tier in (AccessTier.RESTRICTED, AccessTier.CONFIDENTIAL) and (
                not document.allowed_groups.exists()
            )
            who = (
                "no one: a restricted or confidential document with no groups is closed to everyone"
                if nobody
                else "only groups you are not in"
            )
            self.message_user(
                request,
                f"“{document.title or document.source}” can now be read by {who}. It is no longer listed here for "
                f"you; to change its access again, use PUT /api/v1/documents/{document.pk}/acl.",
                messages.WARNING,
            )

    def response_change(self, request: HttpRequest, obj: Document) -> HttpResponse:
        if IS_POPUP_VAR in request.POST or _readable_to(request, obj.pk):
            return super().response_change(request, obj)
        # the document is no longer this admin's to open (save_related warned why): the stock message links to
        # its change page, and "Save and continue editing" returns there, where it now reads as a document that
        # does not exist. The message names it without a link, and the admin goes back to the list
        self.message_user(request, f"The document “{obj}” was changed successfully.", messages.SUCCESS)
        return self.response_post_save_change(request, obj)

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        # chunks must leave through the service so BM25 statistics and graph weights stay exact
        from knowledge.services import documents_remove

        documents_remove(documents=[obj], actor=request.user, detail={"how": "deleted in the admin"})
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        """The "delete selected" action, which Django does not run in a transaction (the delete view does): all
        or nothing, under one audit event naming every document, as the tombstone action records them."""
        from knowledge.services import documents_remove

        with transaction.atomic():
            documents = list(_locked(queryset))
            documents_remove(documents=documents, actor=request.user, detail={"how": "deleted in the admin"})
            for document in documents:
                super().delete_model(request, document)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """What the delete confirmation lists: the documents by name, and how many chunks and outgoing links go
        with them (through the index service, delete_model). Django's own walk refused every document delete, a
        superuser's too ("your account doesn't have permission to delete ... chunk, document link": their admins
        are read-only), and loaded every chunk, posting and mention of the documents as objects, twice (the
        page, then the POST), to list chunk texts that are not what the admin confirms. Nothing points at a
        document in a way that would block its delete (the rest is cascaded or set to null)."""
        documents = list(objs)
        ids = [document.pk for document in documents]
        refused = [document for document in documents if not self.has_delete_permission(request, document)]
        perms_needed = {str(Document._meta.verbose_name)} if refused else set()
        counts = {str(Document._meta.verbose_name_plural): len(documents)}
        for model, field in ((Chunk, "document_id__in"), (DocumentLink, "source_id__in")):
            count = model.objects.filter(**{field: ids}).count()
            if count:
                counts[str(model._meta.verbose_name_plural)] = count
        named = [f"{capfirst(Document._meta.verbose_name)}: {document}" for document in documents]
        return named, counts, perms_needed, []

    @admin.action(description="Re-ingest selected documents from their source files", permissions=["change"])
    def reingest(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        from athena.errors import dependency_unavailable
        from knowledge.services import document_reingest

        count = 0
        for document in queryset:
            try:
                document_reingest(document=document)
            except Exception as exc:
                unavailable = dependency_unavailable(exc)
                if unavailable is None:
                    raise
                # the broker is down: say so instead of a server error, and queue nothing more
                self.message_user(
                    request,
                    f"queued {count} document(s) for re-ingestion; the others were not: {unavailable.message}",
                    messages.ERROR,
                )
                return
            count += 1
        self.message_user(request, f"queued {count} document(s) for re-ingestion", messages.SUCCESS)

    @admin.action(description="Tombstone (exclude from retrieval)", permissions=["delete"])
    def tombstone(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        """Staff who may only view documents are not offered it (permissions); a document tombstoned already is
        left as it is (its tombstone time and the audit log would say it was removed again)."""
        from knowledge.services import documents_remove

        with transaction.atomic():
            documents = list(_locked(queryset).exclude(status=DocumentStatus.TOMBSTONED))
            documents_remove(
                documents=documents, actor=request.user, detail={"how": "tombstoned in the admin"}
            )
        self.message_user(request, f"tombstoned {len(documents)} document(s)", messages.SUCCESS)


def _readable_to(request: HttpRequest, document_id: int) -> bool:
    """Whether the admin of `request` may read the document (and so open it here)."""
    return Document.objects.filter(pk=document_id, pk__in=readable_document_ids(request)).exists()


def _locked(queryset: QuerySet[Document]) -> QuerySet[Document]:
    """The documents of an admin action's selection, read again under their row locks, in id order (the
    selection's queryset may carry the changelist's DISTINCT, which FOR UPDATE refuses)."""
    ids = list(queryset.values_list("pk", flat=True))
    return Document.objects.select_for_update().filter(pk__in=ids).order_by("pk")


@admin.register(Chunk)
class ChunkAdmin(LargeTableAdmin, ReadOnlyAdmin):
    """Chunks number hundreds of thousands: a bounded count, newest first, a tier filter that needs no
    SELECT DISTINCT, and a search through the text's full-text index (get_search_results)."""

    list_display = (
        "id",
        "document",
        "ordinal",
        "section_path",
        "page",
        "token_count",
        "injection_flag",
        "active",
    )
    list_filter = (
        "injection_flag",
        "active",
        choices_list_filter("access_tier", AccessTier.choices, "access tier"),
    )
    search_fields = ("text", "document__source")  # words of the text, or a document's exact source id
    ordering = ("-id",)
    exclude = ("embedding", "tsv")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        return super().get_queryset(request).filter(document_id__in=readable_document_ids(request))

    def get_search_results(self, request: HttpRequest, queryset: Any, search_term: str) -> Any:
        # `text LIKE '%x%'` read every chunk's text (8 s at 300k chunks); the words are matched against the
        # indexed tsvector the chunk was stored with (to_tsvector('english', text), knowledge.indexing)
        from django.contrib.postgres.search import SearchQuery
        from django.db.models import Subquery

        term = search_term.strip()
        if not term:
            return queryset, False
        words = SearchQuery(term, config="english", search_type="websearch")
        named = Subquery(Document.objects.filter(source=term).values("pk")[:1])
        return queryset.filter(Q(tsv=words) | Q(document_id=named)), False


@admin.register(Vendor)
class VendorAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FORM_FIELDS
    list_display = ("name", "kind", "aliases")
    search_fields = ("name",)


@admin.register(Synonym)
class SynonymAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FORM_FIELDS
    list_display = ("term", "expansions")
    search_fields = ("term",)


@admin.register(Entity)
class EntityAdmin(LargeTableAdmin):
    formfield_overrides = JSON_FORM_FIELDS
    list_display = ("kind", "name", "display")
    list_filter = (choices_list_filter("kind", EntityKind.choices, "kind"),)
    search_fields = ("name",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Entity]:
        # an entity's name is text of the documents that mention it: listed only when one the admin may read does
        from knowledge.models import Mention

        readable = Mention.objects.filter(
            entity=OuterRef("pk"), chunk__document_id__in=readable_document_ids(request)
        )
        return super().get_queryset(request).filter(Exists(readable))


@admin.register(DocumentLink)
class DocumentLinkAdmin(ReadOnlyAdmin):
    """Links are found at ingestion: read-only here, and listed only between documents the admin may read."""

    list_display = ("source", "target_ref", "target", "kind")
    list_select_related = ("source", "target")

    def get_queryset(self, request: HttpRequest) -> QuerySet[DocumentLink]:
        readable = readable_document_ids(request)
        links = super().get_queryset(request).filter(source_id__in=readable)
        return links.filter(target__isnull=True) | links.filter(target_id__in=readable)


@admin.register(IngestRun)
class IngestRunAdmin(admin.ModelAdmin):
    """Runs are shown, not edited. A run's counts name each file that failed by its source id, with the error;
    a kb-admin may not read every document (a restricted folder's), and the admin names no document its reader
    cannot read: the run shows how many failed, and each failure is on its document's page, which only those
    who may read the document are shown."""

    formfield_overrides = JSON_FORM_FIELDS
    list_display = ("id", "root", "status", "started_at", "finished_at", "total", "counts_shown")
    fields = ("root", "status", "started_at", "finished_at", "total", "counts_shown", "options")
    readonly_fields = fields

    @admin.display(description="counts")
    def counts_shown(self, obj: IngestRun) -> str:
        """The run's progress and counts in words. The raw counts were shown as a Python dict whose "seconds"
        read 0.0 for every run (a run's batches merge their counts, not their durations): the time it took is
        from its start to its end."""
        from knowledge.services import ingest_run_done

        counts = obj.counts or {}
        done = ingest_run_done(counts)
        files = ", ".join(
            f"{counts.get(key, 0)} {key}" for key in ("new", "changed", "unchanged", "deleted", "failed")
        )
        shown = [
            f"{done} of {obj.total} file(s) done: {files}",
            f"{counts.get('chunks', 0)} chunk(s), {counts.get('reused', 0)} with stored vectors",
        ]
        if counts.get("errors"):
            shown.append(f"{len(counts['errors'])} error(s)")
        if obj.finished_at is not None and obj.started_at is not None:
            shown.append(f"took {(obj.finished_at - obj.started_at).total_seconds():.1f} s")
        stages = counts.get("stage_seconds") or {}
        if stages:
            shown.append("stage seconds: " + ", ".join(f"{name} {secs:.2f}" for name, secs in stages.items()))
        return "; ".join(shown)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a run is made by an ingest, never by hand


class LockingGroupAdmin(GroupAdmin):
    """Django's group admin, its deletes through groups_delete (which locks the groups, and the documents that
    name them, before looking for the ACLs and memberships that point at them)."""

    def delete_model(self, request: HttpRequest, obj: Group) -> None:
        self.delete_queryset(request, Group.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Group]) -> None:
        from knowledge.services import groups_delete

        groups_delete(groups=queryset)


admin.site.unregister(Group)
admin.site.register(Group, LockingGroupAdmin)


class LockingUserAdmin(UserAdmin):
    """Django's user admin, its deletes holding the users (athena.services.users_hold_for_delete) before it
    looks for what protects them: a user's first question or upload being stored meanwhile commits first and
    makes the delete a "cannot delete" page, as for any user with history, instead of a delete that failed at
    commit on the new row (a server error); one that starts later waits and is refused. The delete view runs in
    a transaction already; the delete action is given one here."""

    # the user's groups searched by name, and the list filtered by a typed group name: Django's picker and
    # filter list every group (2,000 groups: the change form 0.9 s, a link per group on every list page)
    autocomplete_fields = ("groups",)
    filter_horizontal = ("user_permissions",)
    list_filter = ("is_staff", "is_superuser", "is_active", name_typed_list_filter("groups__name", "group"))

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        if request.method == "POST":
            from athena.services import users_hold_for_delete

            users_hold_for_delete(ids=[obj.pk for obj in objs])
        return super().get_deleted_objects(objs, request)

    def response_action(self, request: HttpRequest, queryset: Any, *args: Any, **kwargs: Any) -> Any:
        with transaction.atomic():
            return super().response_action(request, queryset, *args, **kwargs)


admin.site.unregister(User)
admin.site.register(User, LockingUserAdmin)
