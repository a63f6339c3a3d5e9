/* zklock--1.3--1.4.sql: what zklock 1.4 adds to 1.3 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.4'" to load this file. \quit

-- Issue 26, the counter's top: zk_status() gains near_top_listings at its
-- end, the listings of a lock directory whose child counter had passed
-- 2^30 (the worker's WARNING, counted).  As in the update to 1.2, the
-- function is dropped and created again, keeping its owner, what was
-- granted on it and its initial privileges.
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
	OUT deadlocks_found bigint,
	OUT near_top_listings bigint)
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

