/* zklock--1.3.sql: SQL objects of the zklock extension (built from zklock--1.0.sql and the upgrade scripts) */

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
	LEFT JOIN pg_catalog.pg_database d ON d.oid = l.dbid;

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

-- Semaphores: at most "permits" holders at once, in the layout of Curator's
-- InterProcessSemaphoreV2 (a mutex in locks/, a lease per holder in
-- leases/), so that Curator programs and SQL sessions share one semaphore.
CREATE FUNCTION zk_semaphore_acquire(name text, permits integer, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_semaphore_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_acquire_xact(name text, permits integer, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_semaphore_acquire_xact'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_try(name text, permits integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_semaphore_try'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_try_xact(name text, permits integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_semaphore_try_xact'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_release(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_semaphore_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- role: "lease" (in leases/: a holder, or the request being counted) or
-- "mutex" (queued in the semaphore's own mutex, locks/).
CREATE FUNCTION zk_semaphore_contenders(name text,
	OUT "position" integer,
	OUT role text,
	OUT state text,
	OUT znode text,
	OUT czxid bigint,
	OUT client text,
	OUT holder jsonb,
	OUT data text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_semaphore_contenders'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Fencing: the highest token accepted so far for each resource of this
-- database.  Dumped and restored with the database.
CREATE TABLE zk_fence_tokens (
	resource text PRIMARY KEY,
	token bigint NOT NULL,
	accepted_at timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('zk_fence_tokens', '');

-- Run as the extension's owner, so that a role granted zk_fence needs no
-- right on zk_fence_tokens; the C code names the table with its schema.
CREATE FUNCTION zk_fence(resource text, token bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'zk_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION zk_fence_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'zk_fence_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- Whether the contender whose czxid is token holds the lock now, by
-- ZooKeeper's word (any client's contender: zklock, Curator, kazoo).
CREATE FUNCTION zk_lock_verify(name text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_verify'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Ask the holders of a lock to give it up (Curator's revocation protocol).
CREATE FUNCTION zk_lock_revoke(name text)
RETURNS integer
AS 'MODULE_PATHNAME', 'zk_lock_revoke'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION zk_semaphore_acquire(text, integer, interval),
	zk_semaphore_acquire_xact(text, integer, interval), zk_semaphore_try(text, integer),
	zk_semaphore_try_xact(text, integer), zk_semaphore_release(text),
	zk_semaphore_contenders(text), zk_fence(text, bigint), zk_fence_trigger(),
	zk_lock_verify(text, bigint), zk_lock_revoke(text) FROM PUBLIC;
REVOKE ALL ON zk_fence_tokens FROM PUBLIC;

-- zk_status() gains the counters of deadlock detection at its end.  A
-- function's OUT columns cannot be changed in place, so it is dropped and
-- created again; what was granted on it (EXECUTE to a monitoring role, as
-- README shows) is granted again, to the same roles with the same grant
-- option (by the owner: GRANT run by a superuser is the owner's), and its
-- owner stays.  The grants made here would otherwise count as the
-- extension's initial privileges (pg_init_privs, which pg_dump leaves out
-- of a dump): the function's initial privileges are put back as they were,
-- so that a dump still grants what the administrator granted.  A fresh
-- install runs this too, so a fresh 1.2 and an updated one are alike.
DO $do$
DECLARE
	fn oid := 'zk_status()'::regprocedure;
	owner oid;
	acl aclitem[];
	init aclitem[];
	granted record;
BEGIN
	SELECT p.proowner, coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner)) INTO owner, acl
	  FROM pg_catalog.pg_proc p WHERE p.oid = fn;
	SELECT i.initprivs INTO init FROM pg_catalog.pg_init_privs i
	 WHERE i.objoid = fn AND i.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND i.objsubid = 0;

	DROP FUNCTION zk_status();
	EXECUTE $create$
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
	OUT handoff_requests bigint,
	OUT deadlock_checks bigint,
	OUT deadlocks_found bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'zk_status'
LANGUAGE C VOLATILE PARALLEL RESTRICTED
$create$;
	fn := 'zk_status()'::regprocedure;
	REVOKE ALL ON FUNCTION zk_status() FROM PUBLIC;
	EXECUTE pg_catalog.format('ALTER FUNCTION zk_status() OWNER TO %I', pg_catalog.pg_get_userbyid(owner));

	FOR granted IN
		SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS grantable
		  FROM pg_catalog.aclexplode(acl) a
		 WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> owner
		 GROUP BY a.grantee
		 ORDER BY a.grantee
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION zk_status() TO %s%s',
			CASE WHEN granted.grantee = 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(granted.grantee)) END,
			CASE WHEN granted.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;

	IF init IS NULL THEN
		DELETE FROM pg_catalog.pg_init_privs
		 WHERE objoid = fn AND classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND objsubid = 0;
	ELSE
		UPDATE pg_catalog.pg_init_privs SET initprivs = init
		 WHERE objoid = fn AND classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND objsubid = 0;
	END IF;
END
$do$;

-- The waits-for edges this cluster can see: published waits of every
-- cluster and their blockers by the lock rule, and this cluster's waits on
-- PostgreSQL locks; wait_kind is zklock or postgresql.
CREATE FUNCTION zk_waits_for(
	OUT waiter_cluster text,
	OUT waiter_pid integer,
	OUT waiter_session text,
	OUT wait_kind text,
	OUT lock text,
	OUT mode text,
	OUT request bigint,
	OUT waiting_since timestamptz,
	OUT blocker_cluster text,
	OUT blocker_pid integer,
	OUT blocker_session text,
	OUT blocker_client text,
	OUT blocker_znode text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_waits_for'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION zk_waits_for() FROM PUBLIC;

-- Fencing that only a holder can advance.  zk_fence keeps a fence per
-- calling role (fencer) and resource, and the trigger one per table and
-- resource, in a table of its own: no role can reach the fence of another
-- role, nor that of a table it cannot write.  A token advances a fence
-- only when it is proven a holder's of the lock the resource names (this
-- session's, or any client's by ZooKeeper's word); a role that may write
-- the tables directly needs no proof.
--
-- 1.2 kept one fence per resource and did not record who advanced it: its
-- rows are kept for every role that may call zk_fence (its owner and
-- grantees) and for every table whose zk_fence_trigger names the resource.
-- An administrator who suspects a row was pushed by a role without a lock
-- deletes it (the next holder's token starts it again).
CREATE TABLE zk_fence_table_tokens (
	fenced_table regclass NOT NULL,
	resource text NOT NULL,
	token bigint NOT NULL,
	accepted_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (fenced_table, resource)
);
SELECT pg_catalog.pg_extension_config_dump('zk_fence_table_tokens', '');
REVOKE ALL ON zk_fence_table_tokens FROM PUBLIC;

INSERT INTO zk_fence_table_tokens (fenced_table, resource, token, accepted_at)
SELECT DISTINCT g.tgrelid::pg_catalog.regclass, t.resource, t.token, t.accepted_at
  FROM pg_catalog.pg_trigger g
  JOIN zk_fence_tokens t
    ON g.tgnargs >= 1
   AND t.resource = pg_catalog.convert_from(
			pg_catalog.substring(g.tgargs, 1, pg_catalog.position(g.tgargs, '\x00'::bytea) - 1),
			pg_catalog.getdatabaseencoding())
 WHERE g.tgfoid = 'zk_fence_trigger()'::pg_catalog.regprocedure AND g.tgparentid = 0;

ALTER TABLE zk_fence_tokens ADD COLUMN fencer regrole;
ALTER TABLE zk_fence_tokens DROP CONSTRAINT zk_fence_tokens_pkey;
INSERT INTO zk_fence_tokens (fencer, resource, token, accepted_at)
SELECT r.role, t.resource, t.token, t.accepted_at
  FROM zk_fence_tokens t,
	   (SELECT DISTINCT a.grantee::pg_catalog.regrole AS role
		  FROM pg_catalog.pg_proc p,
			   pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
		 WHERE p.oid = 'zk_fence(text, bigint)'::pg_catalog.regprocedure
		   AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0) r
 WHERE t.fencer IS NULL;
DELETE FROM zk_fence_tokens WHERE fencer IS NULL;
ALTER TABLE zk_fence_tokens ALTER COLUMN fencer SET NOT NULL;
ALTER TABLE zk_fence_tokens ADD PRIMARY KEY (fencer, resource);

-- From 1.3 both run as their caller, so that the C code knows who calls;
-- it runs the statements on the tables as their owner itself.
CREATE OR REPLACE FUNCTION zk_fence(resource text, token bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'zk_fence_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION zk_fence_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'zk_fence_trigger_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp;
