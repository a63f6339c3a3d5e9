/* zklock--1.3--1.4.sql: what zklock 1.4 changes in 1.3 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.4'" to load this file. \quit

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
