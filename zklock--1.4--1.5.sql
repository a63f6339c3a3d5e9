/* zklock--1.4--1.5.sql: what zklock 1.5 adds to 1.4 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.5'" to load this file. \quit

-- Issue 42: zk_status() gains three counters at its end: early_losses
-- (holds the worker gave up before ZooKeeper could expire the session),
-- session_expiries (ZooKeeper sessions found expired) and commits_refused
-- (commits and prepares refused for a loss or for want of proof).  As in the updates to 1.2 and 1.4
-- the function is created again with its owner, grants and initial
-- privileges, now with a C entry of its own shape (zk_status_1_5); the
-- former one, renamed zk_status_1_4, is dropped unless an object of the
-- database's users depends on it.
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

	ALTER FUNCTION zk_status() RENAME TO zk_status_1_4;
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
	OUT near_top_listings bigint,
	OUT early_losses bigint,
	OUT session_expiries bigint,
	OUT commits_refused bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'zk_status_1_5'
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
		DROP FUNCTION zk_status_1_4();
	EXCEPTION WHEN dependent_objects_still_exist THEN
		RAISE WARNING 'zk_status() of zklock 1.4 is kept as zk_status_1_4(): other objects depend on it'
			USING HINT = 'Create them again over zk_status(), then drop zk_status_1_4().';
	END;
END
$do$;

-- Issue 42: a fence row outlives neither its table nor its role.  A row of
-- zk_fence_table_tokens names its table by OID: once the table is dropped
-- the OID is a number that a dump carries and a restore, or a later
-- CREATE TABLE, may give to another relation, which would inherit the old
-- fence.  An event trigger removes the rows of every table dropped (DROP
-- TABLE, DROP SCHEMA ... CASCADE, DROP OWNED).  It runs as the extension's
-- owner (the table is not the dropping role's to write) with a search_path
-- of pg_catalog only, finding the table through the extension's members so
-- that ALTER EXTENSION zklock SET SCHEMA does not lose it.  Roles are not
-- objects of a database and fire no event trigger: the rows of a role
-- dropped since are removed here, at the update.
CREATE FUNCTION zk_fence_forget_dropped()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	dropped oid[];
	fences regclass;
BEGIN
	SELECT pg_catalog.array_agg(o.objid) INTO dropped
	  FROM pg_catalog.pg_event_trigger_dropped_objects() o
	 WHERE o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND o.objsubid OPERATOR(pg_catalog.=) 0
	   AND o.object_type OPERATOR(pg_catalog.=) 'table';
	IF dropped IS NULL THEN
		RETURN;
	END IF;
	SELECT c.oid::pg_catalog.regclass INTO fences
	  FROM pg_catalog.pg_class c
	  JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.objid OPERATOR(pg_catalog.=) c.oid
	  JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
	 WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
	   AND d.deptype OPERATOR(pg_catalog.=) 'e'
	   AND e.extname OPERATOR(pg_catalog.=) 'zklock'
	   AND c.relname OPERATOR(pg_catalog.=) 'zk_fence_table_tokens';
	IF fences IS NULL OR fences::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (dropped) THEN
		RETURN;					-- the extension itself goes
	END IF;
	EXECUTE pg_catalog.format('DELETE FROM %s WHERE fenced_table::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)', fences)
		USING dropped;
END
$fn$;
REVOKE ALL ON FUNCTION zk_fence_forget_dropped() FROM PUBLIC;

CREATE EVENT TRIGGER zk_fence_forget_dropped ON sql_drop
	EXECUTE FUNCTION zk_fence_forget_dropped();

DELETE FROM zk_fence_table_tokens t
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) t.fenced_table::pg_catalog.oid);
DELETE FROM zk_fence_tokens t
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_authid r WHERE r.oid OPERATOR(pg_catalog.=) t.fencer::pg_catalog.oid);

-- End of issue 42's block.

-- Issue 43: a fenced table is fenced as a tree.  Row triggers fire on the
-- table that holds the row, so an inheritance child without the fence
-- triggers of its parent would have its rows written, through the parent
-- or directly, unfenced; with them, its rows share the fence of the tree's
-- topmost table (the trigger functions resolve it, as they resolve a
-- partition's root).  This event trigger refuses the DDL that would leave
-- a child of a fenced table (CREATE TABLE ... INHERITS, ALTER TABLE ...
-- INHERIT, CREATE TRIGGER on a table with children) without a trigger of
-- the same function, events and arguments.
CREATE FUNCTION zk_fence_tree_check()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	edge record;
BEGIN
	WITH touched AS (
		SELECT CASE WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_trigger'::pg_catalog.regclass
					THEN (SELECT t.tgrelid FROM pg_catalog.pg_trigger t WHERE t.oid OPERATOR(pg_catalog.=) c.objid)
					ELSE c.objid END AS relid
		  FROM pg_catalog.pg_event_trigger_ddl_commands() c
		 WHERE c.classid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.pg_class'::pg_catalog.regclass,
							 'pg_catalog.pg_trigger'::pg_catalog.regclass])
	), fence AS (
		SELECT p.oid
		  FROM pg_catalog.pg_proc p
		  JOIN pg_catalog.pg_depend d
			ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) p.oid
		   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype OPERATOR(pg_catalog.=) 'e'
		  JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid AND e.extname OPERATOR(pg_catalog.=) 'zklock'
		 WHERE p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['zk_fence_trigger', 'zk_fence_delete_trigger']::pg_catalog.name[])
	)
	SELECT i.inhrelid::pg_catalog.regclass AS child,
		   i.inhparent::pg_catalog.regclass AS parent, pt.tgname
	  INTO edge
	  FROM pg_catalog.pg_inherits i
	  JOIN pg_catalog.pg_class pc ON pc.oid OPERATOR(pg_catalog.=) i.inhparent AND pc.relkind OPERATOR(pg_catalog.<>) 'p'
	  JOIN pg_catalog.pg_trigger pt ON pt.tgrelid OPERATOR(pg_catalog.=) i.inhparent
	   AND pt.tgfoid OPERATOR(pg_catalog.=) ANY (SELECT oid FROM fence)
	 WHERE (i.inhrelid OPERATOR(pg_catalog.=) ANY (SELECT relid FROM touched) OR i.inhparent OPERATOR(pg_catalog.=) ANY (SELECT relid FROM touched))
	   AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger ct
						WHERE ct.tgrelid OPERATOR(pg_catalog.=) i.inhrelid AND ct.tgfoid OPERATOR(pg_catalog.=) pt.tgfoid
						  AND ct.tgtype OPERATOR(pg_catalog.=) pt.tgtype AND ct.tgargs OPERATOR(pg_catalog.=) pt.tgargs)
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'table % inherits from fenced table % without its fence trigger "%"',
			edge.child, edge.parent, edge.tgname
			USING ERRCODE = 'invalid_object_definition',
			DETAIL = pg_catalog.format('Row triggers fire on the table that holds the row: the rows of %s would be written unfenced, through %s as well.',
							edge.child, edge.parent),
			HINT = pg_catalog.format('Give %s a trigger like "%s" of %s (same function, events and arguments) before it inherits, or before %s is fenced; its rows then share the fence of the tree''s topmost table.',
						  edge.child, edge.tgname, edge.parent, edge.parent);
	END IF;
END
$$;

REVOKE ALL ON FUNCTION zk_fence_tree_check() FROM PUBLIC;

CREATE EVENT TRIGGER zk_fence_tree_check ON ddl_command_end
	WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE FOREIGN TABLE',
				 'ALTER FOREIGN TABLE', 'CREATE TRIGGER')
	EXECUTE FUNCTION zk_fence_tree_check();

-- Issue 42 (fence rows of dropped roles, and what a dump carries).  A row
-- of zk_fence_tokens names its role by OID, and roles are the cluster's:
-- DROP ROLE, in whatever database it runs, fires no trigger here, and the
-- row stays behind with a number that CREATE ROLE may give again, in the
-- cluster, once the OID counter wraps around.  Each row now carries the
-- name its role had when the row was written (fencer_name): zk_fence reads
-- and advances only a row whose name is its caller's name now, and writes
-- over any other, whose token is then no longer compared (a new token must
-- be proven, as for a fence seen the first time).  A role renamed starts
-- its fences anew the same way.  A row whose fencer_name is null (written
-- by hand) is taken as its role's.
ALTER TABLE zk_fence_tokens ADD COLUMN fencer_name pg_catalog.name;
UPDATE zk_fence_tokens SET fencer_name = pg_catalog.pg_get_userbyid(fencer::pg_catalog.oid);

-- A dump carries the rows of the fencing tables by name (regrole and
-- regclass print names): a restore gives them to the role and the table
-- of that name.  A row whose role or table is gone prints as a bare OID,
-- which a restore would give to whatever role or relation has that OID
-- there: pg_dump now leaves such rows out (the condition is the filter of
-- pg_extension_config_dump, run by pg_dump with a search_path of nothing).
SELECT pg_catalog.pg_extension_config_dump('zk_fence_tokens',
	'WHERE EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) fencer::pg_catalog.oid)');
SELECT pg_catalog.pg_extension_config_dump('zk_fence_table_tokens',
	'WHERE EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) fenced_table::pg_catalog.oid)');

-- End of issue 42's block (fence rows of dropped roles).
