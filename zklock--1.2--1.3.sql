/* zklock--1.2--1.3.sql: what zklock 1.3 changes in 1.2 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.3'" to load this file. \quit

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
	accepted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (fenced_table, resource)
);
SELECT pg_catalog.pg_extension_config_dump('zk_fence_table_tokens', '');
REVOKE ALL ON zk_fence_table_tokens FROM PUBLIC;

INSERT INTO zk_fence_table_tokens (fenced_table, resource, token, accepted_at)
SELECT DISTINCT g.tgrelid::pg_catalog.regclass, t.resource, t.token, t.accepted_at
  FROM pg_catalog.pg_trigger g
  JOIN zk_fence_tokens t
    ON g.tgnargs OPERATOR(pg_catalog.>=) 1
   AND t.resource OPERATOR(pg_catalog.=) pg_catalog.convert_from(
			pg_catalog.substring(g.tgargs, 1, pg_catalog.position(g.tgargs, '\x00'::pg_catalog.bytea) OPERATOR(pg_catalog.-) 1),
			pg_catalog.getdatabaseencoding())
 WHERE g.tgfoid OPERATOR(pg_catalog.=) 'zk_fence_trigger()'::pg_catalog.regprocedure AND g.tgparentid OPERATOR(pg_catalog.=) 0;

ALTER TABLE zk_fence_tokens ADD COLUMN fencer regrole;
ALTER TABLE zk_fence_tokens DROP CONSTRAINT zk_fence_tokens_pkey;
INSERT INTO zk_fence_tokens (fencer, resource, token, accepted_at)
SELECT r.role, t.resource, t.token, t.accepted_at
  FROM zk_fence_tokens t,
	   (SELECT DISTINCT a.grantee::pg_catalog.regrole AS role
		  FROM pg_catalog.pg_proc p,
			   pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
		 WHERE p.oid OPERATOR(pg_catalog.=) 'zk_fence(text, bigint)'::pg_catalog.regprocedure
		   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0) r
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
