"""Logging filters that keep what the logs must not hold out of them.

Celery's worker logs every task it finishes as "Task <name>[<id>] succeeded in <s>s: <return value>". The
return value of the realtime tasks is an answer (its text, the passages it quotes, their titles) or a guarded
passage's text: restricted text, which only readers of its document may see, in a log that operators and log
shippers read. The filter keeps the line (task, id, time) and drops the value, and the arguments Celery also
hands to handlers in the record's `data` (a passage sent to be guarded is one).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

NOT_LOGGED = "(not logged)"
_HIDDEN = ("return_value", "args", "kwargs")


def _without_values(context: Mapping[str, object]) -> dict[str, object]:
    return {key: (NOT_LOGGED if key in _HIDDEN else value) for key, value in context.items()}


class TaskValuesFilter(logging.Filter):
    """On the `celery.app.trace` logger: a record's return value and task arguments become NOT_LOGGED."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, Mapping) and "return_value" in record.args:
            record.args = _without_values(record.args)
        data = getattr(record, "data", None)
        if isinstance(data, Mapping):
            record.data = _without_values(data)
        return True
