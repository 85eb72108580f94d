"""A worker task's failure keeps only what failed (athena.errors.TaskFailed): through Celery's result backend
encoding and back, mapped to a clear error for the asker, the detail only in the worker's log."""

from __future__ import annotations

import json
import logging
import traceback

import pytest

from athena.errors import NotFound, TaskFailed, exception_handler, task_failure_sanitized

pytestmark = [pytest.mark.unit]

SECRET = "quartzline fabric keepalive every 47 seconds"


def _raised_in_task(exc: Exception) -> BaseException:
    with pytest.raises(Exception) as raised, task_failure_sanitized("a_test_task"):
        raise exc
    return raised.value


def test_a_failure_becomes_its_class_name_and_its_detail_goes_to_the_log(caplog) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.ERROR, logger="athena.errors"):
        try:
            raise KeyError(SECRET)
        except KeyError as cause:
            failed = _raised_in_task(ValueError(f"while reading {SECRET}: {cause}"))
    assert isinstance(failed, TaskFailed) and failed.kind == "ValueError" and not failed.dependency
    # what Celery stores: the arguments, and the traceback it formats (no cause, no context)
    stored = "".join(traceback.format_exception(failed)) + json.dumps(failed.args)
    assert SECRET not in stored and "quartzline" not in stored
    assert SECRET in caplog.text and "a_test_task failed" in caplog.text


def test_an_error_written_for_the_asker_goes_on_without_its_cause() -> None:
    try:
        raise LookupError(SECRET)
    except LookupError:
        failed = _raised_in_task(NotFound("no such conversation"))
    assert isinstance(failed, NotFound) and failed.message == "no such conversation"
    assert SECRET not in "".join(traceback.format_exception(failed))


def test_a_stored_failure_comes_back_as_a_clear_error() -> None:
    from athena.celery import app

    for failure, status, code in (
        (TaskFailed("KeyError"), 500, "internal_error"),
        (TaskFailed("OperationalError", "the database"), 503, "dependency_unavailable"),
    ):
        stored = json.loads(json.dumps(app.backend.prepare_exception(failure, "json")))
        rebuilt = app.backend.exception_to_python(stored)
        assert isinstance(rebuilt, TaskFailed) and rebuilt.args == failure.args
        response = exception_handler(rebuilt, {})
        assert response is not None and response.status_code == status
        assert response.data["error"]["code"] == code
    assert "KeyError" in TaskFailed("KeyError").message and "worker's log" in TaskFailed("KeyError").message
