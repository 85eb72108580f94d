"""Settings shared by every environment. Machine-specific values come from athena.env only."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from athena.env import EnvError, database_from_url, env
from athena.paths import BASE_DIR, embedded_redis_password, pg_socket_dir, var_dir

DEBUG = env.bool("ATHENA_DEBUG", False)
SECRET_KEY = env.str("ATHENA_SECRET_KEY", "athena-local-development-key-change-me-in-production-0123456789")
# earlier keys, still accepted while what they signed or sealed is in use (sessions, and the tasks and
# conversation turns in Redis that athena.sealing sealed under them); new ones use SECRET_KEY
SECRET_KEY_FALLBACKS = env.list("ATHENA_SECRET_KEY_FALLBACKS")
ALLOWED_HOSTS = env.list("ATHENA_ALLOWED_HOSTS", ("127.0.0.1", "localhost", "testserver"))
PORT = env.int("PORT", 8000, minimum=1, maximum=65535)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc as static files: the API docs work offline
    "athena",
    "knowledge",
    "retrieval",
    "agents",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # gunicorn serves nothing by itself: WhiteNoise serves the collected static files from STATIC_ROOT
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # after WhiteNoise (which answers static files before it): everything else is Cache-Control: no-store
    "athena.middleware.NoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "athena.middleware.ApiErrorsMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

AUTHENTICATION_BACKENDS = ["athena.auth.ThrottledModelBackend"]  # sign-in throttling (athena.throttling)
ATHENA_LOGIN_FAILURES_PER_NAME = env.int("ATHENA_LOGIN_FAILURES_PER_NAME", 10, minimum=1)
ATHENA_LOGIN_FAILURES_PER_ADDRESS = env.int("ATHENA_LOGIN_FAILURES_PER_ADDRESS", 100, minimum=1)

ROOT_URLCONF = "athena.urls"
WSGI_APPLICATION = "athena.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "athena.context_processors.navigation",
            ]
        },
    }
]

# --- database -------------------------------------------------------------------------------------------
# Two roles (athena/db_roles.py): the application connects with a least-privilege role (DATABASE_URL, alias
# "default"); migrations run as the owner role (ATHENA_MIGRATE_DATABASE_URL, alias "owner"). The embedded
# PostgreSQL creates both (athena_owner, athena_app) at `stack up` and trusts its private unix socket.
DATABASE_URL = env.url("DATABASE_URL", schemes=("postgres", "postgresql"))
MIGRATE_DATABASE_URL = env.url("ATHENA_MIGRATE_DATABASE_URL", schemes=("postgres", "postgresql"))
EMBEDDED_POSTGRES = DATABASE_URL is None
PG_PORT = env.int("ATHENA_PG_PORT", 5433, minimum=1, maximum=65535)
EMBEDDED_OWNER_ROLE = "athena_owner"
EMBEDDED_APP_ROLE = "athena_app"


def _embedded_db(user: str) -> dict[str, Any]:
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": env.str("ATHENA_DB_NAME", "athena"),
        "USER": user,
        "PASSWORD": "",
        "HOST": str(pg_socket_dir()),
        "PORT": str(PG_PORT),
        "OPTIONS": {},
    }


_default_db: dict[str, Any]
_owner_db: dict[str, Any]
if DATABASE_URL:
    _default_db = database_from_url(DATABASE_URL)
    # without a separate owner URL the application's role also migrates (a single-role installation)
    _owner_db = database_from_url(MIGRATE_DATABASE_URL or DATABASE_URL)
else:
    _default_db = _embedded_db(EMBEDDED_APP_ROLE)
    _owner_db = _embedded_db(EMBEDDED_OWNER_ROLE)
# the role granted the application's rights after each migrate (athena.db_roles)
ATHENA_DB_APP_ROLE = env.str("ATHENA_DB_APP_ROLE", str(_default_db["USER"]))
for _db in (_default_db, _owner_db):
    _db["CONN_MAX_AGE"] = env.int("ATHENA_DB_CONN_MAX_AGE", 60, minimum=0)
    _db["TEST"] = {"NAME": env.str("ATHENA_TEST_DB_NAME", "test_athena")}
DATABASES = {"default": _default_db, "owner": _owner_db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- redis / celery -------------------------------------------------------------------------------------
REDIS_URL_EXTERNAL = env.url("REDIS_URL", schemes=("redis", "rediss", "unix"))
EMBEDDED_REDIS_PORT = env.int("ATHENA_REDIS_PORT", 6390, minimum=1, maximum=65535)
# the embedded Redis asks for a password (athena.paths.embedded_redis_password) that only the stack's account reads
REDIS_URL = REDIS_URL_EXTERNAL or f"redis://:{embedded_redis_password()}@127.0.0.1:{EMBEDDED_REDIS_PORT}/0"
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for a retry
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A pool process loads the models in worker_process_init (agents/tasks.py) before it reports "up"; with
# Celery's 4 s default a replacement for a crashed pool process was killed for being slow, again and again,
# and the worker never answered again. Loading takes 5-20 s on a busy 2-core machine.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = env.float("ATHENA_WORKER_PROC_ALIVE_TIMEOUT", 90.0, minimum=4.0)
# A message a dead worker had taken (the whole worker killed: no process left to give it back) comes back
# after the visibility timeout. It must exceed the longest task (a large ingest batch), or a task still
# running would be delivered a second time; realtime questions do not wait for it: the asking web process
# republishes a question whose worker died (agents/realtime.py). Abandoned messages are looked for every
# unacked_restore_interval seconds (one sorted-set range read). That look takes a Redis lock, which outlives a
# worker killed while holding it by the lock's expiry: kombu's 300 s held back every redelivery for five minutes
# (seen once in the fault test of a worker killed mid-ingest); the look takes milliseconds, 30 s is ample.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("ATHENA_BROKER_VISIBILITY_TIMEOUT", 3600, minimum=10),
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 1,
    "unacked_mutex_expire": 30,
    # A worker that consumes several queues takes the next task from the first non-empty one in the order of
    # its -Q list (realtime first), not from each in turn: in turn, questions asked during an ingest of a few
    # hundred documents got one task in three and waited behind the batches (ten askers: p95 95 s, 19 s in this
    # order; tests/athena/test_worker_queues.py). A question still waits for the batch a process is running
    # (knowledge.tasks.EMBED_TASK_CHUNKS keeps it short). Not kombu's plain "priority": after a run of questions
    # the other queues get a turn, or beat's housekeeping (audit checkpoints) waited out every busy hour
    # (athena/queue_order.py)
    "queue_order_strategy": "athena.queue_order:QuestionsFirstCycle",
}
CELERY_RESULT_EXPIRES = 3600  # answers are read within the answer timeout; nothing needs them later
# no task stores what it returned or raised unless its asker reads it (the realtime queue's two, which say so):
# a beat task's failure can name a private upload's file, and Redis keeps it in its append-only file
CELERY_TASK_IGNORE_RESULT = True
# beat saves its schedule file (when each entry last ran) after every task it sends, not every 3 minutes:
# a beat killed after sending the nightly sync and restarted found the older save and sent it again
# (tests/faults/test_beat.py). It sends about 25 tasks an hour; a save rewrites one small file.
CELERY_BEAT_SYNC_EVERY = 1
CELERY_TASK_DEFAULT_QUEUE = "ingest"
# `housekeeping`: beat's short tasks, which a worker takes right after the questions and before the ingest work.
# On `ingest` an audit checkpoint, the hour's audit totals or an upload expiry (the file of an expired private
# upload deleted) waited behind every batch of an ingest of hundreds of documents. The longest, the checkpoint,
# verifies the whole chain (~27k events/s: ~40 s a million events). Beat's ingest work stays on `ingest`: the
# nightly sync (it walks every folder, tombstones what is gone and queues a run behind any ingest queued before
# it), the posting repack (it holds the statistics lock for its whole run) and the stale re-index (it queues
# batches only while the ingest queues are idle)
CELERY_TASK_ROUTES = {
    "knowledge.tasks.embed_index_task": {"queue": "embed"},
    "knowledge.tasks.uploads_expire_task": {"queue": "housekeeping"},
    "knowledge.tasks.*": {"queue": "ingest"},
    "audit.tasks.*": {"queue": "housekeeping"},
    "agents.tasks.*": {"queue": "realtime"},
}
# the queues of ingest work above, which a worker takes after the questions (admission counts what waits there;
# an ingest run counts as in flight while they hold a task). Not `housekeeping`: a few tasks an hour, mostly of
# moments, which neither delay a question by much nor belong to a run
ATHENA_INGEST_QUEUES = ("embed", "ingest")
CELERY_WORKER_CONCURRENCY = env.int("ATHENA_WORKER_CONCURRENCY", 2, minimum=1)
# processes of the local stack's `answerer`, a worker that takes only questions (athena/stack.py): they answer at
# once while every process of the stack's worker runs an ingest task, which a question cannot interrupt
ATHENA_ANSWERER_CONCURRENCY = env.int("ATHENA_ANSWERER_CONCURRENCY", 1, minimum=1)
ATHENA_SOURCE_FOLDERS = env.list("ATHENA_SOURCE_FOLDERS")
# `make run` loads the demo documents of knowledge/sample_kb unless this is false
ATHENA_LOAD_SAMPLE_KB = env.bool("ATHENA_LOAD_SAMPLE_KB", True)
ATHENA_NIGHTLY_SYNC_HOUR = env.int("ATHENA_NIGHTLY_SYNC_HOUR", 2, minimum=0, maximum=23)
# the minute of that hour: beat reads both in UTC (Celery's timezone is TIME_ZONE below); the fault suite
# places the sync a minute ahead with it to kill beat around the moment it fires
ATHENA_NIGHTLY_SYNC_MINUTE = env.int("ATHENA_NIGHTLY_SYNC_MINUTE", 0, minimum=0, maximum=59)

# --- models ---------------------------------------------------------------------------------------------
# One model thread per worker process: torch threads x worker concurrency <= CPU cores (2 here). The stack's
# answerer adds a process (three on two cores): they contend only while all three compute (a question during an
# ingest, or three questions at once).
ATHENA_TORCH_THREADS = env.int("ATHENA_TORCH_THREADS", 1, minimum=1)
# where the embedder and the reranker run: auto takes a CUDA GPU when torch sees one (fp16, large batches)
ATHENA_DEVICE = env.choice("ATHENA_DEVICE", "auto", ("auto", "cpu", "cuda"))
if env.str("ATHENA_EMBEDDER_QUANTIZE"):
    # a silent fall-back would embed queries in another vector space than the stored chunks
    raise EnvError(
        "ATHENA_EMBEDDER_QUANTIZE was replaced by ATHENA_EMBEDDER_PRECISION=auto|bf16|fp32|int8 "
        "(true meant int8, false fp32; auto is the default)"
    )
ATHENA_EMBEDDER = {
    "BACKEND": env.str("ATHENA_EMBEDDER_BACKEND", "knowledge.embedders.MiniLMEmbedder"),
    "OPTIONS": {
        "model": env.str("ATHENA_EMBEDDER_MODEL", ""),
        "query_prefix": env.str("ATHENA_EMBEDDER_QUERY_PREFIX", ""),
        "passage_prefix": env.str("ATHENA_EMBEDDER_PASSAGE_PREFIX", ""),
        # auto: bf16 on CPUs with AVX-512 BF16/AMX (3x fp32 in batches, same vectors within 1e-4 cosine), fp32
        # elsewhere, fp16 on a GPU; int8 only when named (ONNX Runtime with int8 weights, 1.7x torch fp32 on a
        # CPU without bf16; its vectors carry their own model name: changing to or from it needs `reembed`)
        "precision": env.choice("ATHENA_EMBEDDER_PRECISION", "auto", ("auto", "bf16", "fp32", "int8")),
        # questions: auto takes the ONNX Runtime export made at install time (4.6 vs 11 ms per question, the
        # GIL released) when it embeds as torch does, torch otherwise; onnx refuses to start without it
        "query_runtime": env.choice("ATHENA_EMBEDDER_QUERY_RUNTIME", "auto", ("auto", "onnx", "torch")),
    },
    "DIMENSION": env.int("ATHENA_EMBEDDING_DIM", 384, minimum=8, maximum=4000),
    "MAX_TOKENS": env.int("ATHENA_EMBEDDER_MAX_TOKENS", 256, minimum=32),
}
ATHENA_RERANKER = {
    "BACKEND": env.str("ATHENA_RERANKER_BACKEND", "retrieval.rerank.OfflineReranker"),
    "OPTIONS": {"model": env.str("ATHENA_RERANKER_MODEL", "")},
}
ATHENA_LLM = {
    "BACKEND": env.str("ATHENA_LLM_BACKEND", "agents.llm.NoLLM"),
    "OPTIONS": {
        "base_url": env.str("ATHENA_LLM_BASE_URL", ""),
        "model": env.str("ATHENA_LLM_MODEL", ""),
        "api_key": env.str("ATHENA_LLM_API_KEY", ""),
        "timeout": env.float("ATHENA_LLM_TIMEOUT", 30.0, minimum=0.1),
    },
}

# --- ingestion / retrieval / answering -------------------------------------------------------------------
ATHENA_MAX_UPLOAD_BYTES = env.int("ATHENA_MAX_UPLOAD_BYTES", 50_000_000, minimum=1)
# per user: bytes of private uploads stored at once (expired ones are deleted) and upload attempts per hour
ATHENA_UPLOAD_QUOTA_BYTES = env.int("ATHENA_UPLOAD_QUOTA_BYTES", 200_000_000, minimum=1)
ATHENA_UPLOADS_PER_HOUR = env.int("ATHENA_UPLOADS_PER_HOUR", 30, minimum=1)
# decompression limits: what a DOCX (ZIP) may inflate to, and how many pages of a PDF are interpreted
ATHENA_MAX_UNCOMPRESSED_BYTES = env.int("ATHENA_MAX_UNCOMPRESSED_BYTES", 200_000_000, minimum=1)
ATHENA_MAX_PDF_PAGES = env.int("ATHENA_MAX_PDF_PAGES", 2_000, minimum=1)
# how long one file may take to parse before it is refused (seconds); 0: per format, 120 for text formats and
# 900 for DOCX and PDF (knowledge.parsing.registry.MAX_PARSE_SECONDS_BY_TYPE)
ATHENA_MAX_PARSE_SECONDS = env.float("ATHENA_MAX_PARSE_SECONDS", 0.0, minimum=0.0)
ATHENA_CHUNK_TOKENS = env.int("ATHENA_CHUNK_TOKENS", 200, minimum=32)
ATHENA_MAX_QUESTION_CHARS = 1000
ATHENA_QUESTIONS_PER_HOUR = env.int("ATHENA_QUESTIONS_PER_HOUR", 60, minimum=1)
# enumeration: more than this many distinct abstained questions from one user within the window raise an
# enumeration_alert (audited, admins mailed) and pause the user; a person rephrasing abstains a few times, a
# script mapping out what the knowledge base holds abstains dozens of times
ATHENA_ENUMERATION_ABSTENTIONS = env.int("ATHENA_ENUMERATION_ABSTENTIONS", 15, minimum=1)
ATHENA_ENUMERATION_WINDOW_SECONDS = env.int("ATHENA_ENUMERATION_WINDOW_SECONDS", 600, minimum=10)
ATHENA_STALE_AFTER_DAYS = env.int("ATHENA_STALE_AFTER_DAYS", 730, minimum=1)
# prose answers stop after about this many words (whole sentences; the lead unit is always kept)
ATHENA_ANSWER_MAX_WORDS = env.int("ATHENA_ANSWER_MAX_WORDS", 100, minimum=20)
# benchmark switches: answering parts turned off to measure what each adds (`devset.py eval --ablate`); names
# in agents.steps.state.ABLATABLE (an unknown name fails the first question). Empty in any real deployment.
ATHENA_ABLATE = env.list("ATHENA_ABLATE")
ATHENA_MEMORY_TURNS = env.int("ATHENA_MEMORY_TURNS", 6, minimum=1)
ATHENA_MEMORY_TTL_SECONDS = env.int("ATHENA_MEMORY_TTL_SECONDS", 86_400, minimum=60)
ATHENA_UPLOAD_TTL_HOURS = env.int("ATHENA_UPLOAD_TTL_HOURS", 24, minimum=1)
ATHENA_REALTIME_VIA_CELERY = env.bool("ATHENA_REALTIME_VIA_CELERY", True)
ATHENA_REALTIME_QUEUE = "realtime"
# the namespace of the realtime queue's keys in Redis (agents/realtime.py); empty: athena:<database name>:rt. A
# test that writes the workers' state itself takes one of its own, apart from a real worker beating meanwhile
ATHENA_REALTIME_KEYS = env.str("ATHENA_REALTIME_KEYS", "")
# the sorted set in which every worker announces the queues it consumes, for the health check
# (athena/consumers.py); empty: athena:<database name>:consumers. A test's own workers beat under one of its own
ATHENA_CONSUMERS_KEY = env.str("ATHENA_CONSUMERS_KEY", "")
# how long a question waits for the realtime worker before the caller gets "unavailable" (503)
ATHENA_ANSWER_TIMEOUT_SECONDS = env.int("ATHENA_ANSWER_TIMEOUT_SECONDS", 120, minimum=1)
# with no realtime worker sending heartbeats, a question waits this long (a restarting worker is back in a
# few seconds) and then gets 503 with Retry-After instead of waiting the whole answer timeout
ATHENA_NO_WORKER_GRACE_SECONDS = env.float("ATHENA_NO_WORKER_GRACE_SECONDS", 8.0, minimum=1.0)
# back-pressure: a question whose expected wait in the realtime queue exceeds this is refused at once
# (503 + Retry-After) rather than holding a connection; 0 turns the check off. 4 s: with an answer's own
# second, accepted questions stay near the 5 s p95 aim (tests/benchmarks/README.md, load.py)
ATHENA_MAX_QUEUE_WAIT_SECONDS = env.float("ATHENA_MAX_QUEUE_WAIT_SECONDS", 4.0, minimum=0.0)
# fairness: questions one user may have waiting or being answered at once; the next gets 429 + Retry-After at
# once while other users are still admitted (the realtime queue is first-in first-out, so this bounds how much
# of it one user's burst can fill). 2: the chat page asks one at a time; a second tab or a retry may overlap.
# 0 turns the cap off
ATHENA_USER_MAX_IN_FLIGHT = env.int("ATHENA_USER_MAX_IN_FLIGHT", 2, minimum=0)
ATHENA_WORKER_WARM_UP = env.bool("ATHENA_WORKER_WARM_UP", True)

# --- audit ----------------------------------------------------------------------------------------------
# Events are HMAC-signed with this key (audit.services); the database never holds it. Rotation: give the new
# key a new ATHENA_AUDIT_KEY_ID and move the old one to ATHENA_AUDIT_OLD_KEYS ("id:secret,..."), which only
# verifies. No default here: local.py and test.py (DEBUG/tests only) use DEV_AUDIT_KEY, production requires one.
DEV_AUDIT_KEY = "athena-development-audit-key-not-a-secret"
ATHENA_AUDIT_KEY = env.str("ATHENA_AUDIT_KEY", "")
ATHENA_AUDIT_KEY_ID = env.str("ATHENA_AUDIT_KEY_ID", "1")
ATHENA_AUDIT_OLD_KEYS = env.list("ATHENA_AUDIT_OLD_KEYS")
for _number, _item in enumerate(ATHENA_AUDIT_OLD_KEYS, start=1):
    # an entry without its id (or its secret) would be dropped, and the events it signed then fail to verify
    # long after the rotation; the message never repeats the value, which holds a secret
    _key_id, _colon, _secret = _item.partition(":")
    if not (_key_id.strip() and _secret):
        raise EnvError(
            f"ATHENA_AUDIT_OLD_KEYS: entry {_number} is not id:secret (entries are comma-separated)"
        )
# signed checkpoints of the chain's head, outside the database (append-only file)
ATHENA_AUDIT_CHECKPOINT_FILE = env.str(
    "ATHENA_AUDIT_CHECKPOINT_FILE", str(var_dir() / "audit" / "checkpoints.jsonl")
)
ATHENA_AUDIT_CHECKPOINT_MINUTES = env.int("ATHENA_AUDIT_CHECKPOINT_MINUTES", 5, minimum=1, maximum=1440)
# optional remote copy of each committed event's chain entry (id, kind, actor, verdict, hashes; no payload):
# "udp://host:port" sends one RFC 5424 syslog datagram per event; empty (the default) sends nothing
ATHENA_AUDIT_SYSLOG = env.url("ATHENA_AUDIT_SYSLOG", schemes=("udp",)) or ""
if ATHENA_AUDIT_SYSLOG:
    # checked here, not when the first event is sent: a typo would otherwise lose every copy, logged one by one
    _syslog = urlsplit(ATHENA_AUDIT_SYSLOG)
    try:
        _syslog_port = _syslog.port
    except ValueError:
        _syslog_port = None
    if not (_syslog.hostname and _syslog_port):
        raise EnvError(f"ATHENA_AUDIT_SYSLOG={ATHENA_AUDIT_SYSLOG!r} must look like udp://host:port")

# --- web ------------------------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "/static/"
# filled by `manage.py collectstatic` (bootstrap runs it, so `make run` does)
STATIC_ROOT = Path(env.str("ATHENA_STATIC_ROOT", "") or var_dir() / "static")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # hashed names (cached for a year by browsers) and gzip/brotli copies, from a manifest written by collectstatic
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
MEDIA_ROOT = var_dir() / "media"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# the size limit is enforced while a multipart body streams in, before the memory/temporary-file handlers
# receive it (knowledge.uploads.SizeLimitUploadHandler)
FILE_UPLOAD_HANDLERS = [
    "knowledge.uploads.SizeLimitUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
ADMINS = [("Athena admins", env.str("ATHENA_ADMIN_EMAIL", "admins@localhost"))]
EMAIL_BACKEND = env.str("ATHENA_EMAIL_BACKEND", "django.core.mail.backends.filebased.EmailBackend")
EMAIL_FILE_PATH = var_dir() / "mail"

REST_FRAMEWORK = {
    # the token scheme first: a request without valid credentials is then a 401 with WWW-Authenticate: Token
    # (DRF answers 403 when the first scheme is the session's, which has no challenge), so a client can tell
    # "sign in again" from "not allowed"; a browser's session cookie is still read, and its CSRF check kept
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's parsers, with JSON's refusing an object that names one key twice (not keeping the last value)
    "DEFAULT_PARSER_CLASSES": [
        "athena.parsers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # drf-spectacular's, with the error responses every endpoint shares (400, 401, 403, 404, 413, 415, 503)
    "DEFAULT_SCHEMA_CLASS": "athena.schema.AthenaAutoSchema",
    "EXCEPTION_HANDLER": "athena.errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "athena.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Athena KB API",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # request and response components apart: an upload's `file` is then binary (a file picker in Swagger
    # UI), not the URI a response would carry
    "COMPONENT_SPLIT_REQUEST": True,
    # served from our own static files: the product runs on networks without internet access
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# the debug page (ATHENA_DEBUG) hides the connection URLs too: they carry passwords
DEFAULT_EXCEPTION_REPORTER_FILTER = "athena.errors.SettingsReporterFilter"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # the worker's "Task ... succeeded" lines without the task's return value (an answer, a passage's text)
    "filters": {"task_values": {"()": "athena.logfilters.TaskValuesFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {"celery.app.trace": {"filters": ["task_values"]}},
    "root": {
        "handlers": ["console"],
        "level": env.choice("ATHENA_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR")),
    },
}
