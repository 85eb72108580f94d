"""gunicorn settings for every deployment (stack, systemd, compose, Kubernetes): `gunicorn -c
python:athena.gunicorn_conf athena.wsgi:application`.

A request thread may wait for an answer up to ATHENA_ANSWER_TIMEOUT_SECONDS, so the worker timeout is
derived from it here, once, instead of being repeated (and drifting) in each deployment file. Threads
(gthread) because a request spends its time waiting on the realtime queue, not computing; there are enough
of them that questions wait in the application's admission check (which answers 503 + Retry-After when the
expected wait is too long) rather than unseen in the listen backlog.
"""

from athena.env import env

_answer_timeout = env.int("ATHENA_ANSWER_TIMEOUT_SECONDS", 120, minimum=1)

bind = env.str("ATHENA_WEB_BIND", "0.0.0.0:8000")
workers = env.int("ATHENA_WEB_WORKERS", 2, minimum=1)
worker_class = "gthread"
threads = env.int("ATHENA_WEB_THREADS", 16, minimum=1)
# above the longest answer wait plus the time to audit and respond: gunicorn must never kill a worker whose
# thread is still waiting for an answer that the service will give
timeout = _answer_timeout + 30
# on SIGTERM (a stop) a worker stops taking requests, and the master SIGKILLs it after this long: as long as a
# request may wait for its answer, or a question asked just before a deploy (30 s before) was cut off with no
# response and no audit event (the web process audits the answer when it arrives). Every stop budget in deploy/
# (TimeoutStopSec, terminationGracePeriodSeconds, stop_grace_period) and `stack down`'s is above it
graceful_timeout = timeout
keepalive = 5
accesslog = "-"
# gunicorn's default line, less the query string and the Referer: a compliance search (`/compliance/?text=...`,
# the words of the questions searched for; `document=` a restricted document's source), a document lookup
# (`?source=`) or a sign-in's `?next=` would be written to a log that operators read, not only compliance staff
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'
