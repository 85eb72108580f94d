"""Document endpoints: visible list/detail/metadata, citation passages, private uploads, admin ACL and re-ingest."""

from __future__ import annotations

import contextlib
import os
import unicodedata
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from athena.errors import (
    ApplicationError,
    ErrorSerializer,
    Forbidden,
    NotFound,
    ValidationFailed,
    dependency_unavailable,
    flatten_detail,
    storage_full,
)
from athena.http import (
    refuse_repeated_params,
    refuse_unknown_fields,
    refuse_unknown_params,
    reject_unknown_fields,
)
from athena.pagination import MAX_OFFSET, paged_schema
from athena.permissions import IsKbAdmin, is_kb_admin
from athena.principals import Principal
from athena.services import user_held
from athena.throttling import document_probe_record, ensure_not_blocked
from athena.validators import text_problem
from knowledge.models import AccessTier, DocType, Document, DocumentStatus
from knowledge.parsing import ParseError, archive_limits_check
from knowledge.selectors import (
    NOT_FOUND_MESSAGE,
    chunk_get_visible,
    document_get_visible,
    document_list_visible,
    document_metadata,
    documents_readable,
    get_document_metadata,
    passage_code_lines,
)
from knowledge.uploads import (
    UploadTooLarge,
    upload_lock,
    upload_partials_remove,
    upload_quota_check,
    upload_rate_hit,
)

UPLOAD_SUFFIXES = (".pdf", ".docx", ".md", ".markdown", ".txt", ".html", ".htm")


class DocumentOutputSerializer(serializers.ModelSerializer):
    groups = serializers.SerializerMethodField()
    private = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = [
            "id",
            "source",
            "title",
            "author",
            "doc_type",
            "department",
            "vendor",
            "access_tier",
            "status",
            "version",
            "source_updated_at",
            "ingested_at",
            "review_by",
            "chunk_count",
            "expires_at",
            "private",
            "groups",
            "error",
        ]

    def get_groups(self, obj: Document) -> list[str]:
        # group names are part of what an admin curates; readers see only the groups they share (the names of
        # other groups are not theirs to learn); with no request in the context, none (fail closed)
        names = sorted(group.name for group in obj.allowed_groups.all())  # prefetched by the list
        if "reader_groups" not in self.context:
            user = getattr(self.context.get("request"), "user", None)
            if user is None or not getattr(user, "is_authenticated", False):
                self.context["reader_groups"] = frozenset()
            elif is_kb_admin(user):
                self.context["reader_groups"] = None  # every group
            else:
                self.context["reader_groups"] = frozenset(Principal.from_user(user).group_names)
        shared = self.context["reader_groups"]
        return names if shared is None else [name for name in names if name in shared]

    def get_private(self, obj: Document) -> bool:
        return obj.owner_id is not None


class DocumentListApi(APIView):
    """Documents visible to the caller (same rule as retrieval)."""

    class DocumentListFilterSerializer(serializers.Serializer):
        q = serializers.CharField(required=False, allow_blank=True, max_length=200)
        doc_type = serializers.ChoiceField(choices=DocType.choices, required=False)
        access_tier = serializers.ChoiceField(choices=AccessTier.choices, required=False)
        mine = serializers.BooleanField(required=False, default=False)
        limit = serializers.IntegerField(required=False, min_value=1, max_value=500)
        # bounded: past the database's bigint the OFFSET failed with a message that named no parameter
        offset = serializers.IntegerField(required=False, min_value=0, max_value=MAX_OFFSET)

    @extend_schema(
        operation_id="documents_list",
        parameters=[DocumentListFilterSerializer],
        responses=paged_schema("DocumentPage", DocumentOutputSerializer),
    )
    def get(self, request: Request) -> Response:
        refuse_unknown_params(request, self.DocumentListFilterSerializer)
        params = self.DocumentListFilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        qs = document_list_visible(
            principal=Principal.from_user(request.user),
            query=data.get("q", ""),
            doc_type=data.get("doc_type", ""),
            access_tier=data.get("access_tier", ""),
            mine=data.get("mine", False),
        )
        limit, offset = data.get("limit", 50), data.get("offset", 0)
        page = list(qs.prefetch_related("allowed_groups")[offset : offset + limit])
        return Response(
            {
                "count": qs.count(),
                "limit": limit,
                "offset": offset,
                "results": DocumentOutputSerializer(page, many=True, context={"request": request}).data,
            }
        )


def _visible_or_probe(request: Request, document_id: int) -> Document:
    ensure_not_blocked(request.user, endpoint="documents")
    try:
        return document_get_visible(principal=Principal.from_user(request.user), document_id=document_id)
    except NotFound:
        document_probe_record(request.user, document_id)
        raise


# a caller who probed many ids they may not read is paused (athena.throttling.ensure_not_blocked)
PROBE_BLOCKED = OpenApiResponse(
    ErrorSerializer,
    description="`throttled`: requests are paused after an unusual access pattern (many ids that were not "
    "found); Retry-After says for how long",
)


class DocumentDetailApi(APIView):
    @extend_schema(responses={200: DocumentOutputSerializer, 429: PROBE_BLOCKED})
    def get(self, request: Request, document_id: int) -> Response:
        refuse_unknown_params(request)
        document = _visible_or_probe(request, document_id)
        return Response(DocumentOutputSerializer(document, context={"request": request}).data)


class DocumentMetadataOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.CharField()
    title = serializers.CharField()
    sections = serializers.ListField(child=serializers.CharField())
    updated_at = serializers.DateTimeField(allow_null=True)
    access_tier = serializers.CharField()
    doc_type = serializers.CharField()
    version = serializers.IntegerField()
    review_by = serializers.DateField(allow_null=True)
    superseded = serializers.BooleanField()


class DocumentMetadataApi(APIView):
    """get_document_metadata: title, section list, last update and tier."""

    @extend_schema(responses={200: DocumentMetadataOutputSerializer, 429: PROBE_BLOCKED})
    def get(self, request: Request, document_id: int) -> Response:
        refuse_unknown_params(request)
        meta = document_metadata(
            _visible_or_probe(request, document_id), principal=Principal.from_user(request.user)
        )
        return Response(DocumentMetadataOutputSerializer(meta).data)


class DocumentLookupApi(APIView):
    """Metadata by source id (the `document` field of a citation)."""

    @extend_schema(
        parameters=[OpenApiParameter("source", str, required=True)],
        responses={
            200: DocumentMetadataOutputSerializer,
            404: OpenApiResponse(
                ErrorSerializer,
                description="`not_found`: no document of that source id, or none the caller may read",
            ),
        },
    )
    def get(self, request: Request) -> Response:
        refuse_unknown_fields(request.query_params.keys(), {"source", "format"})  # as the lists do
        refuse_repeated_params(request.query_params)
        source = request.query_params.get("source", "")
        if not source or len(source) > 1000:
            raise ValidationFailed("query parameter 'source' is required (at most 1000 characters)")
        problem = text_problem(source)
        if problem:  # the database refuses it, with a message that names no parameter
            raise ValidationFailed(f"query parameter 'source' {problem}")
        meta = get_document_metadata(principal=Principal.from_user(request.user), source=source)
        return Response(DocumentMetadataOutputSerializer(meta).data)


class PassageOutputSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    text = serializers.CharField()
    section = serializers.CharField()
    page = serializers.IntegerField(allow_null=True)
    ordinal = serializers.IntegerField()
    code_lines = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="numbers (from 0) of the lines of `text` that the document's format marks as code",
    )
    document = DocumentMetadataOutputSerializer()


class PassageApi(APIView):
    """The full text of a cited passage with its document's metadata (for the citation viewer).

    The route is served by agents.apis.GuardedPassageApi, which passes the text through the same output guard
    as answers (PII masked, confidential markings removed); that guard lives in agents, above this layer."""

    def guard_text(self, text: str) -> str:
        return text

    @extend_schema(responses=PassageOutputSerializer)
    def get(self, request: Request, chunk_id: int) -> Response:
        refuse_unknown_params(request)
        principal = Principal.from_user(request.user)
        chunk = chunk_get_visible(principal=principal, chunk_id=chunk_id)
        meta = get_document_metadata(principal=principal, document_id=chunk.document_id)
        text = self.guard_text(chunk.text)
        return Response(
            PassageOutputSerializer(
                {
                    "chunk_id": chunk.pk,
                    "text": text,
                    "section": chunk.section_path,
                    "page": chunk.page,
                    "ordinal": chunk.ordinal,
                    "code_lines": passage_code_lines(stored=chunk.text, shown=text, marked=chunk.code_lines),
                    "document": meta,
                }
            ).data
        )


MAX_UPLOAD_NAME_BYTES = 255  # NAME_MAX of Linux file systems


def upload_store(*, user: Any, upload: Any) -> tuple[str, Path]:
    """Save an uploaded file under MEDIA_ROOT/uploads/<user id>/ and return (source id, path)."""
    from knowledge.services import safe_source_id

    raw_name = str(upload.name or "").replace("\\", "/")
    # NFC: a browser on macOS may send the name decomposed ("e" + U+0301); one name, one document
    name = unicodedata.normalize("NFC", os.path.basename(raw_name).strip())
    # the file system counts a name in bytes (255 on ext4, XFS): 200 characters of Japanese or accented letters
    # are 300 to 600 bytes of UTF-8, which the rename below failed with ENAMETOOLONG (a server error)
    if (
        not name
        or name.startswith(".")
        or len(name) > 200
        or len(name.encode("utf-8")) > MAX_UPLOAD_NAME_BYTES
    ):
        raise ValidationFailed(
            "the file needs a plain name (no leading dot, at most 200 characters and "
            f"{MAX_UPLOAD_NAME_BYTES} bytes in UTF-8)"
        )
    if not name.lower().endswith(UPLOAD_SUFFIXES):
        raise ValidationFailed(f"unsupported file type; allowed: {', '.join(UPLOAD_SUFFIXES)}")
    if upload.size > settings.ATHENA_MAX_UPLOAD_BYTES:  # the streaming handler refused most already
        raise UploadTooLarge(
            f"file too large (limit {settings.ATHENA_MAX_UPLOAD_BYTES} bytes)",
            details={"limit": settings.ATHENA_MAX_UPLOAD_BYTES},
        )
    if name.lower().endswith(".docx"):
        # a zip bomb is refused from the archive's directory before it is stored or queued for parsing
        try:
            archive_limits_check(
                upload.file, name=name, max_uncompressed=settings.ATHENA_MAX_UNCOMPRESSED_BYTES
            )
        except ParseError as exc:
            raise ValidationFailed(
                f"the file could not be accepted: {exc.message}", code="unsafe_archive"
            ) from exc
        upload.file.seek(0)
    source = safe_source_id(f"uploads/{user.pk}/{name}")
    media = Path(settings.MEDIA_ROOT).resolve()
    folder = (media / "uploads" / str(user.pk)).resolve()
    target = (media / source).resolve()
    if target.parent != folder:  # belt and braces against traversal through odd names
        raise ValidationFailed("unsafe file name")
    with upload_lock(user=user):  # the quota checked and the file stored as one step (two uploads at once)
        upload_partials_remove(user=user)  # left by a process killed while writing: no longer anyone's
        upload_quota_check(user=user, name=name, size=upload.size)
        # the services' account's alone: a private upload in a file the umask left 0644, in folders 0755, was
        # readable by every local account of the host
        media.mkdir(parents=True, exist_ok=True)
        for directory in (media / "uploads", folder):
            directory.mkdir(mode=0o700, exist_ok=True)
            directory.chmod(0o700)  # also one an earlier release made
        # written aside, then renamed over the name: an ingest reading an earlier upload of the name (still
        # parsing it) reads that file whole, never one being rewritten under it
        partial = folder / f".{uuid.uuid4().hex}.part"  # uploads.PARTIAL_GLOB
        try:
            with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
                for piece in upload.chunks():
                    handle.write(piece)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    return source, target


def upload_not_queued(*, document: Document, path: Path, root: str, options: Any, error: str) -> None:
    """An upload whose ingestion could not be queued (the broker is down): it is marked failed with the
    reason (services.document_record_failure: an earlier indexed version stays served), and its file is
    deleted unless that version is there, so nothing is left on disk that no document names (it would count
    against the owner's quota until it expired)."""
    from knowledge.services import document_record_failure

    document_record_failure(
        source=document.source,
        path=path,
        root=root,
        error=f"not queued for indexing: {error}; upload it again",
        options=options,
    )
    if not Document.objects.filter(pk=document.pk, status=DocumentStatus.INDEXED).exists():
        path.unlink(missing_ok=True)


class DocumentUploadApi(APIView):
    """Upload a private document (PDF/DOCX/MD/TXT/HTML): readable only by the uploader, expiring."""

    parser_classes = [MultiPartParser, FormParser]

    class DocumentUploadInputSerializer(serializers.Serializer):
        file = serializers.FileField()

    @extend_schema(
        request={"multipart/form-data": DocumentUploadInputSerializer},
        parameters=[
            OpenApiParameter(
                "Retry-After",
                int,
                OpenApiParameter.HEADER,
                response=[503],
                description="seconds before uploading again is expected to succeed",
            )
        ],
        responses={
            201: DocumentOutputSerializer,
            400: OpenApiResponse(
                ErrorSerializer,
                description="`invalid`: no file, more than one, an unsupported type or a bad name; "
                "`unsafe_archive`: a DOCX that is damaged, holds too many members or would inflate past "
                "ATHENA_MAX_UNCOMPRESSED_BYTES or 100 times its size; `unreadable`: the file could not be parsed "
                "(known at once only when uploads are indexed in the web process)",
            ),
            413: OpenApiResponse(
                ErrorSerializer,
                description="`too_large`: the file is over ATHENA_MAX_UPLOAD_BYTES (refused as the body streams "
                "in); `quota_exceeded`: the caller's stored uploads would pass ATHENA_UPLOAD_QUOTA_BYTES",
            ),
            429: OpenApiResponse(
                ErrorSerializer, description="`throttled`: more than ATHENA_UPLOADS_PER_HOUR upload attempts"
            ),
            503: OpenApiResponse(
                ErrorSerializer,
                description="`dependency_unavailable`: the file could not be queued for indexing (broker down); "
                "the document is marked failed with the reason (an earlier indexed version stays served)",
            ),
            507: OpenApiResponse(
                ErrorSerializer,
                description="`insufficient_storage`: the server's disk is full; nothing of the file was kept "
                "and no document was recorded",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        from audit.services import audit_record
        from knowledge.services import IngestOptions, database_now, files_ingest

        upload_rate_hit(user=request.user)  # before the body is parsed (when CSRF has not parsed it already)
        refuse_unknown_fields(request.data, {"file"})
        refuse_unknown_params(request)
        files = len(request.FILES.getlist("file"))
        if files > 1:
            # the serializer would read the last part alone and store that one under a 201
            raise ValidationFailed(f"one file per upload, got {files}", details={"file": files})
        serializer = self.DocumentUploadInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = request.user
        source, path = upload_store(user=user, upload=serializer.validated_data["file"])
        # both on the database's clock, which the expiry and a removal are compared with (database_now)
        requested_at = database_now()
        expires_at = requested_at + timedelta(hours=settings.ATHENA_UPLOAD_TTL_HOURS)
        # requested now: a removal made while the file waits in the queue wins over it
        options = IngestOptions(
            owner_id=user.pk,
            access_tier=AccessTier.CONFIDENTIAL,
            expires_at=expires_at,
            requested_at=requested_at,
        )
        root = str(Path(settings.MEDIA_ROOT).resolve())
        queued = settings.ATHENA_REALTIME_VIA_CELERY
        summary: dict[str, Any] = {"queued": True}
        if not queued:
            summary = files_ingest(
                root=root, files=[(source, str(path))], options=options, force=True
            ).as_dict()
        # the document's row and the audit event commit before the file is queued: a worker never indexes an
        # upload that has neither, and one that cannot be queued is found and told below
        try:
            with transaction.atomic():
                # an admin deleting the uploader meanwhile: refused (403), not a server error at commit
                user_held(user_id=user.pk)
                document, created = Document.objects.get_or_create(
                    source=source,
                    defaults={
                        "owner_id": user.pk,
                        "access_tier": AccessTier.CONFIDENTIAL,
                        "expires_at": expires_at,
                    },
                )
                if not created and document.expires_at != expires_at:
                    # the same file uploaded again renews its time, as the audit event says (unchanged content is
                    # not indexed again, so ingestion would not)
                    Document.objects.filter(pk=document.pk).update(expires_at=expires_at)
                    document.expires_at = expires_at
                if queued and document.status == DocumentStatus.FAILED:
                    # a file whose earlier upload failed is queued again: pending until the worker has read it
                    Document.objects.filter(pk=document.pk).update(status=DocumentStatus.PENDING, error="")
                    document.status, document.error = DocumentStatus.PENDING, ""
                audit_record(
                    kind="upload",
                    actor=user,
                    documents=[source],
                    verdict=document.status,
                    payload={
                        "document": source,
                        "bytes": path.stat().st_size,
                        "expires_at": expires_at.isoformat(),
                        "errors": summary.get("errors", {}),
                    },
                )
        except Forbidden:
            path.unlink(missing_ok=True)  # stored for an account that no longer exists
            raise
        if queued:
            from knowledge.tasks import files_seal, ingest_files_task

            try:
                # no result is awaited: without ignore_result Celery first subscribes to the result store,
                # and a Redis that is down then fails there with a RuntimeError instead of the broker's error
                ingest_files_task.apply_async(
                    (None, root, files_seal([[source, str(path)]]), options.as_dict()), ignore_result=True
                )
            except Exception as exc:
                unavailable = dependency_unavailable(exc)
                if unavailable is None:
                    raise
                upload_not_queued(
                    document=document, path=path, root=root, options=options, error=unavailable.message
                )
                raise unavailable from exc  # audited as a refusal (handle_exception)
        if document.status == "failed":
            raise ValidationFailed(f"the file could not be read: {document.error}", code="unreadable")
        return Response(
            DocumentOutputSerializer(document, context={"request": request}).data,
            status=status.HTTP_201_CREATED,
        )

    def handle_exception(self, exc: Exception) -> Response:
        """Every refused upload (size, quota, rate, unsafe archive, bad name or type) is audited. The size
        refusal may come while authentication parses the body (CSRF check), so the actor is Django's session
        user when DRF has not set one."""
        if isinstance(exc, exceptions.ValidationError):  # the serializer's: an empty or missing file
            exc = ValidationFailed(flatten_detail(exc.detail), details=exc.detail)
        full = storage_full(exc)  # a full disk, storing the file or spooling the body: audited too
        if full is not None:
            exc = full
            # the file Django was spooling when the disk filled is still open (its parser closes only the files
            # it completed): closing it deletes it now, not whenever the request is collected
            for handler in self.request._request.upload_handlers:
                spooled = getattr(handler, "file", None)
                if spooled is not None:
                    with contextlib.suppress(OSError):
                        spooled.close()
        if isinstance(exc, ApplicationError) and exc.code != "unreadable":  # unreadable: audited as "upload"
            upload_refusal_audit(self.request, exc)
        return super().handle_exception(exc)


def upload_refusal_audit(request: Request, exc: ApplicationError) -> None:
    from athena.throttling import RateLimited
    from audit.aggregation import audit_aggregated
    from audit.services import audit_record

    user = getattr(request._request, "user", None)  # Django's middleware user: set even if DRF's auth failed
    user = getattr(request, "_user", None) or user
    if user is None or not getattr(user, "is_authenticated", False):
        return
    payload = {"code": exc.code, "message": exc.message, "content_length": request.META.get("CONTENT_LENGTH")}
    if isinstance(
        exc, RateLimited
    ):  # a flood is aggregated like other throttling (one event per count decade)
        audit_aggregated(
            kind="upload_refused", actor=user, subject=str(user.pk), payload=payload, verdict="refused"
        )
        return
    audit_record(kind="upload_refused", actor=user, payload=payload, verdict="refused")


# what an admin endpoint leaves out of a document the admin may not read: everything taken from its text or
# naming it (being a kb-admin grants no read access); its id, tier, groups, status and counts stay
UNREADABLE_FIELDS = ("source", "title", "author", "department", "vendor", "error")


def _admin_view(request: Request, document: Document) -> dict[str, Any]:
    data = dict(DocumentOutputSerializer(document, context={"request": request}).data)
    # an admin's view: an expired document its groups may read keeps its fields (the admin screens list it too)
    readable = (
        documents_readable(principal=Principal.from_user(request.user), include_expired=True)
        .filter(pk=document.pk)
        .exists()
    )
    if not readable:
        data.update(dict.fromkeys(UNREADABLE_FIELDS, ""))
    return data


def _document_or_404(document_id: int) -> Document:
    """Any document by id, visible or not (admin endpoints)."""
    document = Document.objects.filter(pk=document_id).first()
    if document is None:
        raise NotFound(NOT_FOUND_MESSAGE)
    return document


class DocumentAclApi(APIView):
    """Admins: set a document's access tier and allowed groups (recorded in the audit log)."""

    permission_classes = [IsKbAdmin]

    class DocumentAclInputSerializer(serializers.Serializer):
        access_tier = serializers.ChoiceField(choices=AccessTier.choices)
        groups = serializers.ListField(child=serializers.CharField(max_length=150), max_length=100)

    @extend_schema(request=DocumentAclInputSerializer, responses=DocumentOutputSerializer)
    def put(self, request: Request, document_id: int) -> Response:
        from knowledge.services import document_set_acl

        refuse_unknown_params(request)
        reject_unknown_fields(request, self.DocumentAclInputSerializer)
        serializer = self.DocumentAclInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        document = _document_or_404(document_id)
        groups = serializer.validated_data["groups"]
        missing = sorted(
            set(groups) - set(Group.objects.filter(name__in=groups).values_list("name", flat=True))
        )
        if missing:
            # a typo in a group name would otherwise create a new, empty group and hide the document
            raise ValidationFailed(f"unknown group(s): {', '.join(missing)}", details={"unknown": missing})
        document = document_set_acl(
            document=document,
            access_tier=serializer.validated_data["access_tier"],
            groups=groups,
            actor=request.user,
            create_groups=False,  # checked again under the lock: a group deleted since is not made again
        )
        return Response(_admin_view(request, document))


class DocumentReingestApi(APIView):
    """Admins: parse and index the document's source file again."""

    permission_classes = [IsKbAdmin]

    @extend_schema(request=None, responses={202: DocumentOutputSerializer})
    def post(self, request: Request, document_id: int) -> Response:
        from audit.services import audit_record
        from knowledge.services import document_reingest

        refuse_unknown_params(request)
        document = _document_or_404(document_id)
        if not document.source_path:
            raise ValidationFailed("this document has no source file to re-ingest")
        document_reingest(document=document)
        audit_record(
            kind="reingest",
            actor=request.user,
            documents=[document.source],
            payload={"document": document.source},
        )
        return Response(_admin_view(request, document), status=status.HTTP_202_ACCEPTED)
