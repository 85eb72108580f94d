"""Application errors and the one DRF exception handler that maps them to `{"error": {code, message}}`."""

from __future__ import annotations

import contextlib
import errno
import logging
import re
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DataError
from django.http import Http404
from django.views.debug import SafeExceptionReporterFilter
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler


class ApplicationError(Exception):
    """Base of the errors services raise; `code` is stable and machine-readable."""

    code = "error"
    http_status = status.HTTP_400_BAD_REQUEST

    def __init__(
        self, message: str, *, code: str | None = None, details: Any = None, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details
        # seconds before a retry may succeed, when known: sent as the Retry-After header (exception_handler)
        self.retry_after = retry_after


class ValidationFailed(ApplicationError):
    code = "invalid"


class NotFound(ApplicationError):
    code = "not_found"
    http_status = status.HTTP_404_NOT_FOUND


class Forbidden(ApplicationError):
    code = "forbidden"
    http_status = status.HTTP_403_FORBIDDEN


class Conflict(ApplicationError):
    code = "conflict"
    http_status = status.HTTP_409_CONFLICT


class Unavailable(ApplicationError):
    """A dependency (worker, broker, database) cannot serve the request now; `retry_after` seconds is the
    client's hint (sent as the Retry-After header)."""

    code = "unavailable"
    http_status = status.HTTP_503_SERVICE_UNAVAILABLE


class InsufficientStorage(ApplicationError):
    """The disk the server writes to is full (or its quota is spent): nothing of the request was kept."""

    code = "insufficient_storage"
    http_status = status.HTTP_507_INSUFFICIENT_STORAGE


logger = logging.getLogger(__name__)


class TaskFailed(ApplicationError):
    """A worker task's failure as the result backend keeps it and its asker reads it: the class name of what
    was raised (`kind`) and which dependency went away (`dependency`: "the database", "the message broker" or
    ""), never the exception's message or traceback, which can quote a passage or name a restricted file and
    would stay in Redis for CELERY_RESULT_EXPIRES; those go to the worker's log (task_failure_sanitized).
    Celery rebuilds it on the asking side from its arguments, so they are all it holds."""

    code = "internal_error"
    http_status = status.HTTP_500_INTERNAL_SERVER_ERROR

    def __init__(self, kind: str, dependency: str = "") -> None:
        super().__init__(f"the worker failed on this request ({kind}); the details are in the worker's log")
        self.kind = kind
        self.dependency = dependency
        self.args = (kind, dependency)


@contextlib.contextmanager
def task_failure_sanitized(what: str) -> Iterator[None]:
    """In a worker task: an exception raised inside becomes a TaskFailed, raised without its cause (Celery
    stores the traceback it formats); the original, with its traceback, is logged here, in the worker's log
    (0600, the service account's). `what` names the task in that log line. An ApplicationError, whose message
    is meant for the asker, goes on as it is, less its cause."""
    try:
        yield
    except TaskFailed:
        raise
    except ApplicationError as exc:
        # written for the asker (a conversation gone, a filter refused): kept, so that the asker gets its status
        # and message, but without its cause, whose message Celery's stored traceback would carry
        raise exc from None
    except Exception as exc:
        logger.exception("%s failed", what)
        raise TaskFailed(type(exc).__name__, dependency=_dependency_lost(exc)) from None


def storage_full(exc: Exception) -> InsufficientStorage | None:
    """A write that found no room on the disk (an upload stored, or spooled while its body is read): 507 with
    a message the asker can act on, never a bare 500; logged as an error for the operator who must free space."""
    if not isinstance(exc, OSError) or exc.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    logger.error("no space left on the device writing %s: %s", exc.filename or "a file", exc.strerror)
    return InsufficientStorage(
        "the server has no room to store the file right now (its disk is full); nothing was kept: try again "
        "later, or tell an administrator"
    )


# How long a client should wait before retrying when the database or the broker dropped the connection:
# a restarted PostgreSQL or Redis accepts connections again within a few seconds.
DEPENDENCY_RETRY_AFTER_SECONDS = 5


def _result_store_lost(exc: Exception) -> bool:
    """Celery's Redis result store gave up reconnecting (Redis is down when a task that awaits its result is
    published): Celery raises a bare RuntimeError, known only by its message."""
    from celery.backends.asynchronous import E_RETRY_LIMIT_EXCEEDED

    return isinstance(exc, RuntimeError) and str(exc) == E_RETRY_LIMIT_EXCEEDED


def _dependency_lost(exc: Exception) -> str:
    """Which dependency `exc` says went away ("the database", "the message broker"), or "" for none."""
    import psycopg
    from django.db import InterfaceError, OperationalError
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeout

    # psycopg's own classes too: a worker's raw-cursor statement (BM25 blocks) fails with them
    if isinstance(exc, OperationalError | InterfaceError | psycopg.OperationalError | psycopg.InterfaceError):
        return "the database"
    if isinstance(exc, BrokerError | RedisConnectionError | RedisTimeout) or _result_store_lost(exc):
        return "the message broker"
    return ""


def dependency_unavailable(exc: Exception) -> Unavailable | None:
    """The database or the broker went away mid-request (restart, failover), here or in the worker that ran
    the request's task (a TaskFailed that says so): 503 with a retry hint, never 500. Django drops the broken
    connection at the end of the request, so the next one reconnects."""
    what = exc.dependency if isinstance(exc, TaskFailed) else _dependency_lost(exc)
    if not what:
        return None
    return Unavailable(
        f"{what} is not reachable right now; retry in a few seconds",
        code="dependency_unavailable",
        retry_after=DEPENDENCY_RETRY_AFTER_SECONDS,
    )


def flatten_detail(detail: Any) -> str:
    """DRF error detail (dict, list or string) as one line: `field: message; other: message`."""
    if isinstance(detail, dict):
        # a rule across fields (DRF's `non_field_errors`) reads as its message alone
        return "; ".join(
            flatten_detail(value)
            if key == api_settings.NON_FIELD_ERRORS_KEY
            else f"{key}: {flatten_detail(value)}"
            for key, value in detail.items()
        )
    if isinstance(detail, list):
        return " ".join(flatten_detail(item) for item in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DataError) or (isinstance(exc, ValueError) and "NUL" in str(exc)):
        # a value the database cannot represent (out-of-range number, NUL byte): the request is at fault
        exc = ValidationFailed(
            "a parameter has a value out of range or contains characters that are not allowed"
        )
    exc = dependency_unavailable(exc) or storage_full(exc) or exc
    if isinstance(exc, ApplicationError):
        body: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.details is not None:
            body["details"] = exc.details
        response = Response({"error": body}, status=exc.http_status)
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            body["retry_after"] = retry_after
            response["Retry-After"] = str(retry_after)
        return response
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.APIException):
        code = exc.get_codes()
        code_text = code if isinstance(code, str) else "invalid"
        response.data = {"error": {"code": code_text, "message": flatten_detail(exc.detail)}}
        if isinstance(exc, exceptions.ValidationError):
            response.data["error"]["details"] = exc.detail
    return response


# --- the envelope in the OpenAPI schema ---------------------------------------------------------------------
class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    retry_after = serializers.IntegerField(required=False, help_text="seconds; also sent as Retry-After")
    details = serializers.DictField(required=False)


class ErrorSerializer(serializers.Serializer):
    """`{"error": {"code", "message", "details"?}}`: every error under /api/."""

    error = ErrorDetailSerializer()


class SettingsReporterFilter(SafeExceptionReporterFilter):
    """Django's debug page (ATHENA_DEBUG) lists the settings, hiding those whose names look secret; the
    connection URLs carry passwords (the embedded Redis's is in REDIS_URL, CELERY_BROKER_URL and
    CELERY_RESULT_BACKEND) under names its pattern does not match."""

    hidden_settings = re.compile(
        "API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|BROKER|BACKEND", flags=re.I
    )
