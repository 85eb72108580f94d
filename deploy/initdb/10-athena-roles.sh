#!/bin/sh
# docker-entrypoint-initdb.d hook of the compose `db` service: the two roles of deploy/roles.sql.
set -eu
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres \
  -v owner_password="'${ATHENA_OWNER_PASSWORD}'" -v app_password="'${ATHENA_APP_PASSWORD}'" \
  -f /athena/roles.sql
