/* zklock--1.3--1.4.sql: what zklock 1.4 adds to 1.3 and changes in it */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.4'" to load this file. \quit

-- Issue 26, the counter's top: zk_status() gains near_top_listings at its
-- end, the listings of a lock directory whose child counter had passed
-- 2^30 (the worker's WARNING, counted).  As in the update to 1.2, the
-- function is created again, keeping its owner, what was granted on it and
-- its initial privileges; the former one, renamed zk_status_1_3, is
-- dropped unless an object depends on it.
DO $do$
DECLARE
	fn oid := 'zk_status()'::pg_catalog.regprocedure;
	owner oid;
	acl aclitem[];
	init aclitem[];
	granted record;
BEGIN
	SELECT p.proowner, coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner)) INTO owner, acl
	  FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) fn;
	SELECT i.initprivs INTO init FROM pg_catalog.pg_init_privs i
	 WHERE i.objoid OPERATOR(pg_catalog.=) fn AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass AND i.objsubid OPERATOR(pg_catalog.=) 0;

	ALTER FUNCTION zk_status() RENAME TO zk_status_1_3;
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
	OUT deadlocks_found bigint,
	OUT near_top_listings bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'zk_status'
LANGUAGE C VOLATILE PARALLEL RESTRICTED
$create$;
	fn := 'zk_status()'::pg_catalog.regprocedure;
	REVOKE ALL ON FUNCTION zk_status() FROM PUBLIC;
	EXECUTE pg_catalog.format('ALTER FUNCTION zk_status() OWNER TO %I', pg_catalog.pg_get_userbyid(owner));

	FOR granted IN
		SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS grantable
		  FROM pg_catalog.aclexplode(acl) a
		 WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) owner
		 GROUP BY a.grantee
		 ORDER BY a.grantee
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION zk_status() TO %s%s',
			CASE WHEN granted.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(granted.grantee)) END,
			CASE WHEN granted.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;

	IF init IS NULL THEN
		DELETE FROM pg_catalog.pg_init_privs
		 WHERE objoid OPERATOR(pg_catalog.=) fn AND classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass AND objsubid OPERATOR(pg_catalog.=) 0;
	ELSE
		UPDATE pg_catalog.pg_init_privs SET initprivs = init
		 WHERE objoid OPERATOR(pg_catalog.=) fn AND classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass AND objsubid OPERATOR(pg_catalog.=) 0;
	END IF;
	-- The former function goes, unless an object of the database's users
	-- depends on it (a view over zk_status(), say): then it stays, under
	-- its new name, with its grants, and that object keeps working (the
	-- library still serves its shape).  Dropping it would make the update
	-- fail until the object were dropped.
	BEGIN
		DROP FUNCTION zk_status_1_3();
	EXCEPTION WHEN dependent_objects_still_exist THEN
		RAISE WARNING 'zk_status() of zklock 1.3 is kept as zk_status_1_3(): other objects depend on it'
			USING HINT = 'Create them again over zk_status(), then drop zk_status_1_3().';
	END;
END
$do$;

-- Issue 34: zk_lock_stats, cumulative statistics per lock since the last
-- reset (the backends count them in shared memory; a clean restart keeps
-- them, a crash resets them).  Readable by pg_read_all_stats and by the
-- roles an administrator grants them to, as zk_locks; the reset is the
-- administrator's to grant, as zk_lock_revoke.
CREATE FUNCTION zk_lock_stats_internal(
	OUT name text,
	OUT kind text,
	OUT acquired_session bigint,
	OUT acquired_xact bigint,
	OUT granted_at_once bigint,
	OUT waited bigint,
	OUT total_wait_time double precision,
	OUT mean_wait_time double precision,
	OUT max_wait_time double precision,
	OUT holds bigint,
	OUT total_hold_time double precision,
	OUT max_hold_time double precision,
	OUT timeouts bigint,
	OUT cancels bigint,
	OUT deadlocks bigint,
	OUT losses bigint,
	OUT revocations bigint,
	OUT hold_limit_expiries bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_stats'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW zk_lock_stats AS
	SELECT * FROM zk_lock_stats_internal();

CREATE FUNCTION zk_lock_stats_info_internal(
	OUT entries bigint,
	OUT evicted bigint,
	OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'zk_lock_stats_info'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW zk_lock_stats_info AS
	SELECT * FROM zk_lock_stats_info_internal();

-- NULL: every lock's figures, the eviction counter too.
CREATE FUNCTION zk_lock_stats_reset(name text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_stats_reset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION zk_lock_stats_internal(), zk_lock_stats_info_internal(),
	zk_lock_stats_reset(text) FROM PUBLIC;
REVOKE ALL ON zk_lock_stats, zk_lock_stats_info FROM PUBLIC;
GRANT EXECUTE ON FUNCTION zk_lock_stats_internal(), zk_lock_stats_info_internal() TO pg_read_all_stats;
GRANT SELECT ON zk_lock_stats, zk_lock_stats_info TO pg_read_all_stats;
-- Issue 27: a delete from a fenced table is fenced too.  A BEFORE DELETE
-- row trigger fences each delete (MERGE's as well) with the session's own
-- token for the lock that the resource names, in the table's fence of
-- that resource (the one zk_fence_trigger keeps), and refuses it when the
-- session holds no such lock.
CREATE FUNCTION zk_fence_delete_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'zk_fence_delete_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION zk_fence_delete_trigger() FROM PUBLIC;

-- Issue 27: fence first.  The table's fence of resource, taken with a
-- token (NULL: the session's own for lock resource) before the transaction
-- writes rows, so that the holder's transactions queue on the fence
-- instead of deadlocking over rows each locked before its trigger reached
-- the fence.
CREATE FUNCTION zk_fence_table(fenced_table regclass, resource text, token bigint DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_fence_table'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION zk_fence_table(regclass, text, bigint) FROM PUBLIC;
