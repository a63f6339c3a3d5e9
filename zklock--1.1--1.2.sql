/* zklock--1.1--1.2.sql: what zklock 1.2 adds to 1.1 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.2'" to load this file. \quit

-- zk_status() gains the counters of deadlock detection at its end.  A
-- function's OUT columns cannot be changed in place, so it is renamed
-- zk_status_1_1 (and dropped at the end unless an object depends on it)
-- and created again; what was granted on it (EXECUTE to a monitoring role, as
-- README shows) is granted again, to the same roles with the same grant
-- option (by the owner: GRANT run by a superuser is the owner's), and its
-- owner stays.  The grants made here would otherwise count as the
-- extension's initial privileges (pg_init_privs, which pg_dump leaves out
-- of a dump): the function's initial privileges are put back as they were,
-- so that a dump still grants what the administrator granted.  A fresh
-- install runs this too, so a fresh 1.2 and an updated one are alike.
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

	ALTER FUNCTION zk_status() RENAME TO zk_status_1_1;
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
		DROP FUNCTION zk_status_1_1();
	EXCEPTION WHEN dependent_objects_still_exist THEN
		RAISE WARNING 'zk_status() of zklock 1.1 is kept as zk_status_1_1(): other objects depend on it'
			USING HINT = 'Create them again over zk_status(), then drop zk_status_1_1().';
	END;
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
