#!/usr/bin/env bash
# Property-based API fuzzing against the OpenAPI schema: no operation may answer 5xx.
#   bash tests/benchmarks/schemathesis.sh            (needs the stack: make run, or stack up --only postgres,redis)
# /api/v1/health is excluded: it answers 503 by design when a component (e.g. the worker) is down.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/pip install -q schemathesis==4.32.5
TOKEN=$(.venv/bin/python manage.py shell -c "
from rest_framework.authtoken.models import Token
from athena.services import user_create_or_update
user, _ = user_create_or_update(username='fuzz-admin', groups=['employees', 'kb-admins', 'compliance'])
print(Token.objects.get_or_create(user=user)[0].key)" | tail -1)
ATHENA_REALTIME_VIA_CELERY=false ATHENA_QUESTIONS_PER_HOUR=100000 \
    .venv/bin/python manage.py runserver 127.0.0.1:8022 --noreload > var/log/schemathesis-server.log 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
sleep 6
.venv/bin/schemathesis run http://127.0.0.1:8022/api/v1/schema --header "Authorization: Token $TOKEN" \
    --checks not_a_server_error --max-examples "${EXAMPLES:-25}" --exclude-path-regex 'health'
