-- upgrade: 1.0 updated to the newest version has exactly the objects,
-- definitions and privileges (and initial privileges, which pg_dump goes by)
-- of a fresh install of it; the suites after this one run on the updated one
CREATE TEMP VIEW members AS
SELECT pg_describe_object(classid, objid, 0) AS member,
       CASE WHEN classid = 'pg_proc'::regclass THEN pg_get_functiondef(objid) END AS def,
       CASE WHEN classid = 'pg_proc'::regclass THEN (SELECT proacl::text FROM pg_proc WHERE oid = objid)
            WHEN classid = 'pg_class'::regclass THEN (SELECT relacl::text FROM pg_class WHERE oid = objid)
       END AS acl,
       (SELECT initprivs::text FROM pg_init_privs i
         WHERE i.objoid = d.objid AND i.classoid = d.classid AND i.objsubid = 0) AS init_acl
FROM pg_depend d WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock');
CREATE TEMP TABLE fresh AS SELECT * FROM members;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
DROP EXTENSION zklock;
CREATE EXTENSION zklock VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
-- a lock held across the update stays held
SELECT zk_lock_acquire('across') > 0 AS held_before;
ALTER EXTENSION zklock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT state, mode FROM zk_locks WHERE name = 'across';
SELECT zk_lock_release('across');
CREATE TEMP TABLE updated AS SELECT * FROM members;
SELECT count(*) AS members, count(def) AS functions FROM fresh;
(SELECT 'only fresh' AS side, * FROM fresh EXCEPT SELECT 'only fresh', * FROM updated)
UNION ALL
(SELECT 'only updated', * FROM updated EXCEPT SELECT 'only updated', * FROM fresh);
