"""Gunicorn settings for every web server (`stack run`, deploy/): `gunicorn -c python:athena.gunicorn_conf`.

A web worker waits up to ATHENA_ANSWER_TIMEOUT_SECONDS for the realtime worker's answer, then audits the
attempt and answers 503. Gunicorn's own worker timeout (default 30 s) must outlast that wait, or the worker
is killed mid-wait and the question goes unaudited.
"""

from __future__ import annotations

from athena.env import env

# time to write the audit event and the 503 after the wait has run out
AUDIT_MARGIN_SECONDS = 30

answer_wait = env.int("ATHENA_ANSWER_TIMEOUT_SECONDS", 120, minimum=1)
timeout = answer_wait + AUDIT_MARGIN_SECONDS
graceful_timeout = 10
