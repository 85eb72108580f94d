-- Run once, as a PostgreSQL superuser, before the first `manage.py migrate`:
--   psql -v owner_password="'...'" -v app_password="'...'" -f deploy/roles.sql
-- athena_owner owns the database and runs migrations (ATHENA_MIGRATE_DATABASE_URL, used only by the
-- migrate job); athena_app is what web, workers and beat use (DATABASE_URL). After each migrate the owner
-- grants athena_app its rights (athena/db_roles.py): data rights on the application's tables, only INSERT
-- and SELECT on the audit log, nothing it could use to alter tables, disable triggers or truncate; on
-- PostgreSQL 17 and later also MAINTAIN on the search index's tables, so that an ingest can ANALYZE them.
CREATE ROLE athena_owner LOGIN PASSWORD :owner_password NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE ROLE athena_app LOGIN PASSWORD :app_password NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE DATABASE athena OWNER athena_owner;
\connect athena
-- pgvector is not a trusted extension: the superuser installs it; the owner's migration then finds it.
CREATE EXTENSION IF NOT EXISTS vector;
-- PostgreSQL >= 15 already denies CREATE on schema public to PUBLIC; older servers need this.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
