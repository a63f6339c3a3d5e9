/* zklock--1.0.sql: SQL objects of the zklock extension */

\echo Use "CREATE EXTENSION zklock" to load this file. \quit

CREATE FUNCTION zk_lock_acquire(name text, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_acquire_xact(name text, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_acquire_xact'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_try(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_try'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_try_xact(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_try_xact'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_release(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Shared (read) locks: readers share, a writer (the functions above)
-- excludes everyone, and a writer that asked first is served first.
CREATE FUNCTION zk_lock_acquire_shared(name text, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_acquire_shared'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_acquire_xact_shared(name text, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_acquire_xact_shared'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_try_shared(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_try_shared'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_try_xact_shared(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_try_xact_shared'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_release_shared(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_release_shared'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Several exclusive locks, all or none, taken in one canonical order.
CREATE FUNCTION zk_lock_acquire(names text[], timeout interval DEFAULT NULL)
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'zk_lock_acquire_set'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_acquire_xact(names text[], timeout interval DEFAULT NULL)
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'zk_lock_acquire_xact_set'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_contenders(name text,
	OUT "position" integer,
	OUT mode text,
	OUT state text,
	OUT znode text,
	OUT czxid bigint,
	OUT client text,
	OUT holder jsonb,
	OUT data text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_contenders'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION zk_lock_release_all()
RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_release_all'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_token(name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_token'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION zk_lock_check(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_check'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION zk_lock_path(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'zk_lock_path'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE FUNCTION zk_locks_internal(
	OUT pid integer,
	OUT dbid oid,
	OUT name text,
	OUT mode text,
	OUT scope text,
	OUT state text,
	OUT znode text,
	OUT fencing_token bigint,
	OUT requested_at timestamptz,
	OUT granted_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_locks'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW zk_locks AS
	SELECT l.pid, d.datname AS database, l.name, l.mode, l.scope, l.state,
		   l.znode, l.fencing_token, l.requested_at, l.granted_at
	FROM zk_locks_internal() l
	LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) l.dbid;

CREATE FUNCTION zk_status(
	OUT state text,
	OUT session_id text,
	OUT server text,
	OUT negotiated_timeout integer,
	OUT connected_since timestamptz,
	OUT last_contact timestamptz,
	OUT acquired bigint,
	OUT released bigint,
	OUT timeouts bigint,
	OUT cancels bigint,
	OUT lost bigint,
	OUT zk_requests bigint,
	OUT watch_events bigint,
	OUT slots_used integer,
	OUT slots_total integer,
	OUT release_requests bigint,
	OUT handoffs bigint,
	OUT handoff_requests bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'zk_status'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Locks are a shared resource of every cluster on the ensemble: an
-- administrator grants them (see README).
REVOKE ALL ON FUNCTION zk_lock_acquire(text, interval), zk_lock_acquire_xact(text, interval),
	zk_lock_try(text), zk_lock_try_xact(text), zk_lock_release(text), zk_lock_release_all(),
	zk_lock_acquire_shared(text, interval), zk_lock_acquire_xact_shared(text, interval),
	zk_lock_try_shared(text), zk_lock_try_xact_shared(text), zk_lock_release_shared(text),
	zk_lock_acquire(text[], interval), zk_lock_acquire_xact(text[], interval), zk_lock_contenders(text),
	zk_lock_token(text), zk_lock_check(text), zk_lock_path(text), zk_locks_internal(), zk_status() FROM PUBLIC;
REVOKE ALL ON zk_locks FROM PUBLIC;
