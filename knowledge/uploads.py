"""Limits on private uploads: the body's size while it streams in, a per-user quota of stored bytes and a
per-user hourly rate. Kept free of heavy imports: the upload handler is loaded for every multipart request."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from rest_framework import status

from athena.errors import ApplicationError

logger = logging.getLogger(__name__)

# multipart framing (boundaries, part headers, the other form fields) on top of the file itself
MULTIPART_OVERHEAD_BYTES = 64 * 1024


class UploadTooLarge(ApplicationError):
    code = "too_large"
    http_status = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


class UploadQuotaExceeded(ApplicationError):
    code = "quota_exceeded"
    http_status = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


def _too_large(limit: int) -> UploadTooLarge:
    return UploadTooLarge(f"file too large (limit {limit} bytes)", details={"limit": limit})


class SizeLimitUploadHandler(FileUploadHandler):
    """First of FILE_UPLOAD_HANDLERS: refuses a multipart body whose declared length is over the limit before
    reading it, and counts the bytes of every file as they stream in, raising as soon as the count crosses
    ATHENA_MAX_UPLOAD_BYTES, so the handlers after it (memory, temporary file) never receive the rest."""

    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        self.limit = int(settings.ATHENA_MAX_UPLOAD_BYTES)
        self.seen = 0

    def handle_raw_input(
        self, input_data: Any, META: Any, content_length: int, boundary: Any, encoding: Any = None
    ) -> None:
        if content_length and content_length > self.limit + MULTIPART_OVERHEAD_BYTES:
            raise _too_large(self.limit)
        return None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        # counted over all files of the request: several parts must not add up past the limit either
        self.seen += len(raw_data)
        if self.seen > self.limit:
            raise _too_large(self.limit)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler builds the file object


def upload_folder(user: Any) -> Path:
    return (Path(settings.MEDIA_ROOT) / "uploads" / str(user.pk)).resolve()


# the first key of the per-user upload locks: pg_advisory_xact_lock(UPLOAD_LOCK, user id)
UPLOAD_LOCK = 7_413_010


@contextmanager
def upload_lock(*, user: Any) -> Iterator[None]:
    """One upload of `user` at a time, from the quota check until its file is stored: two uploads sent at once
    would each pass the check against what was stored before either (together over the quota), and two of
    one name would write into one file. A database lock, so that web servers on several hosts sharing the
    media folder take it too."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [UPLOAD_LOCK, int(user.pk)])
        yield


# a file being written before it is renamed over its name (upload_store); uploaded names never start with a dot
PARTIAL_GLOB = ".*.part"


def upload_partials_remove(*, user: Any) -> int:
    """Delete the part-written files a killed web process left in `user`'s folder (they would count against the
    quota for ever, and nothing names them). Call it under upload_lock: no upload of the user is being written
    then, on any host. Returns how many were removed."""
    folder = upload_folder(user)
    removed = 0
    for partial in folder.glob(PARTIAL_GLOB) if folder.is_dir() else ():
        partial.unlink(missing_ok=True)
        removed += 1
    return removed


def upload_quota_check(*, user: Any, name: str, size: int) -> None:
    """Refuse an upload that would take the user's stored private uploads over ATHENA_UPLOAD_QUOTA_BYTES.
    Stored files are what counts: expired uploads are deleted with their files, and a file of the same name
    is replaced, so its old size is not counted twice."""
    quota = int(settings.ATHENA_UPLOAD_QUOTA_BYTES)
    folder = upload_folder(user)
    used = 0
    if folder.is_dir():
        used = sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.name != name)
    if used + size > quota:
        raise UploadQuotaExceeded(
            f"upload quota exceeded: {used} of {quota} bytes in use, this file needs {size}",
            details={"quota": quota, "used": used, "size": size},
        )


def upload_rate_hit(*, user: Any) -> None:
    """Count one upload attempt for `user`; raise RateLimited past ATHENA_UPLOADS_PER_HOUR."""
    from athena.throttling import WINDOW_SECONDS, RateLimited, key_prefix, redis_client, redis_now

    limit = int(settings.ATHENA_UPLOADS_PER_HOUR)
    try:
        client = redis_client()
        now = int(redis_now(client))  # one clock for every web host counting into the window
        window = now // WINDOW_SECONDS
        key = f"{key_prefix()}:upload:{user.pk}:{window}"
        with client.pipeline() as pipe:
            pipe.incr(key)
            pipe.expire(key, WINDOW_SECONDS + 60)
            count = int(pipe.execute()[0])
    except Exception:
        logger.warning("upload rate: redis unavailable, upload not counted", exc_info=True)
        return
    if count > limit:
        retry_after = (window + 1) * WINDOW_SECONDS - now
        raise RateLimited(
            f"upload limit reached ({limit} per hour); try again in {retry_after // 60 + 1} min",
            details={"retry_after": retry_after, "limit": limit},
        )
