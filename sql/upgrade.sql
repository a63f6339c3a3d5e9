-- upgrade: 1.0 updated to 1.1 has exactly the objects, definitions and
-- privileges of a fresh 1.1; the suites after this one run on the updated one
CREATE TEMP VIEW members AS
SELECT pg_describe_object(classid, objid, 0) AS member,
       CASE WHEN classid = 'pg_proc'::regclass THEN pg_get_functiondef(objid) END AS def,
       CASE WHEN classid = 'pg_proc'::regclass THEN (SELECT proacl::text FROM pg_proc WHERE oid = objid)
            WHEN classid = 'pg_class'::regclass THEN (SELECT relacl::text FROM pg_class WHERE oid = objid)
       END AS acl
FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
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
