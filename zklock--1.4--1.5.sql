/* zklock--1.4--1.5.sql: what zklock 1.5 adds to 1.4 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.5'" to load this file. \quit

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
		SELECT CASE WHEN c.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass
					THEN (SELECT t.tgrelid FROM pg_catalog.pg_trigger t WHERE t.oid = c.objid)
					ELSE c.objid END AS relid
		  FROM pg_catalog.pg_event_trigger_ddl_commands() c
		 WHERE c.classid IN ('pg_catalog.pg_class'::pg_catalog.regclass,
							 'pg_catalog.pg_trigger'::pg_catalog.regclass)
	), fence AS (
		SELECT p.oid
		  FROM pg_catalog.pg_proc p
		  JOIN pg_catalog.pg_depend d
			ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
		   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
		  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'zklock'
		 WHERE p.proname IN ('zk_fence_trigger', 'zk_fence_delete_trigger')
	)
	SELECT i.inhrelid::pg_catalog.regclass AS child,
		   i.inhparent::pg_catalog.regclass AS parent, pt.tgname
	  INTO edge
	  FROM pg_catalog.pg_inherits i
	  JOIN pg_catalog.pg_class pc ON pc.oid = i.inhparent AND pc.relkind <> 'p'
	  JOIN pg_catalog.pg_trigger pt ON pt.tgrelid = i.inhparent
	   AND pt.tgfoid IN (SELECT oid FROM fence)
	 WHERE (i.inhrelid IN (SELECT relid FROM touched) OR i.inhparent IN (SELECT relid FROM touched))
	   AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger ct
						WHERE ct.tgrelid = i.inhrelid AND ct.tgfoid = pt.tgfoid
						  AND ct.tgtype = pt.tgtype AND ct.tgargs = pt.tgargs)
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'table % inherits from fenced table % without its fence trigger "%"',
			edge.child, edge.parent, edge.tgname
			USING ERRCODE = 'invalid_object_definition',
			DETAIL = format('Row triggers fire on the table that holds the row: the rows of %s would be written unfenced, through %s as well.',
							edge.child, edge.parent),
			HINT = format('Give %s a trigger like "%s" of %s (same function, events and arguments) before it inherits, or before %s is fenced; its rows then share the fence of the tree''s topmost table.',
						  edge.child, edge.tgname, edge.parent, edge.parent);
	END IF;
END
$$;

REVOKE ALL ON FUNCTION zk_fence_tree_check() FROM PUBLIC;

CREATE EVENT TRIGGER zk_fence_tree_check ON ddl_command_end
	WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE FOREIGN TABLE',
				 'ALTER FOREIGN TABLE', 'CREATE TRIGGER')
	EXECUTE FUNCTION zk_fence_tree_check();
