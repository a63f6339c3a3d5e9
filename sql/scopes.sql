-- scopes: transaction-scope holds follow PostgreSQL's resource owners, as
-- pg_advisory_xact_lock does.  Every step takes zklock lock 'scN' and
-- advisory lock N together; after each, "same" compares what this backend
-- holds of each kind.
CREATE FUNCTION take(i int) RETURNS boolean LANGUAGE sql AS
$$ SELECT zk_lock_acquire_xact('sc' || i) > 0 AND pg_advisory_xact_lock(i)::text = '' $$;
CREATE VIEW held AS
SELECT coalesce(z.names, '') = coalesce(a.names, '') AS same, coalesce(z.names, '') AS zklock
FROM (SELECT string_agg(name, ',' ORDER BY name COLLATE "C") AS names FROM zk_locks
      WHERE pid = pg_backend_pid() AND state = 'held' AND name LIKE 'sc%') z,
     (SELECT string_agg('sc' || objid, ',' ORDER BY ('sc' || objid) COLLATE "C") AS names FROM pg_locks
      WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted) a;
BEGIN;
SELECT take(1);
SELECT * FROM held;
-- ROLLBACK TO gives back what was taken after the savepoint
SAVEPOINT a;
SELECT take(2);
ROLLBACK TO a;
SELECT * FROM held;
-- RELEASE passes it to the parent
SAVEPOINT b;
SELECT take(3);
RELEASE b;
SELECT * FROM held;
-- nested: the inner level released into the outer, the outer rolled back
SAVEPOINT c;
SELECT take(4);
SAVEPOINT d;
SELECT take(5);
RELEASE d;
SELECT * FROM held;
ROLLBACK TO c;
SELECT * FROM held;
-- a cursor declared before a savepoint and fetched inside it keeps what it
-- took when the savepoint is rolled back: its holds belong to its portal
DECLARE cur CURSOR FOR SELECT i, take(i) FROM generate_series(6, 9) i;
SAVEPOINT e;
FETCH 2 FROM cur;
ROLLBACK TO e;
SELECT * FROM held;
FETCH 1 FROM cur;
SELECT * FROM held;
CLOSE cur;
SELECT * FROM held;
-- a cursor declared inside a savepoint goes with it, and so do its holds
SAVEPOINT f;
DECLARE cur2 CURSOR FOR SELECT i, take(i) FROM generate_series(10, 11) i;
FETCH 1 FROM cur2;
ROLLBACK TO f;
SELECT * FROM held;
-- an exception block gives back what it took
DO $$
BEGIN
	PERFORM take(12);
	BEGIN
		PERFORM take(13);
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END $$;
SELECT * FROM held;
-- the same hold stacked in two levels: one rolled back, one kept
SAVEPOINT g;
SELECT take(1);
ROLLBACK TO g;
SELECT * FROM held;
COMMIT;
SELECT * FROM held;
-- a session hold of a name also held in transaction scope stays after the
-- transaction, and one release gives it back
BEGIN;
SELECT take(14);
SELECT zk_lock_acquire('sc14') > 0 AS session_hold, pg_advisory_lock(14)::text = '' AS advisory;
ROLLBACK;
SELECT * FROM held;
SELECT zk_lock_release('sc14'), pg_advisory_unlock(14);
SELECT * FROM held;
-- lock functions refuse to run in parallel mode, where a worker's lock
-- would vanish with the worker
CREATE FUNCTION wrongly_safe(i int) RETURNS bigint LANGUAGE sql PARALLEL SAFE AS
$$ SELECT zk_lock_acquire_xact('par' || i) $$;
CREATE TABLE many AS SELECT g FROM generate_series(1, 1000) g;
ANALYZE many;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
\set VERBOSITY terse
SELECT count(wrongly_safe(g)) FROM many WHERE g < 3;
\set VERBOSITY default
RESET ALL;
SELECT count(*) AS holds FROM zk_locks WHERE pid = pg_backend_pid() AND state = 'held';
DROP TABLE many;
DROP FUNCTION wrongly_safe(int);
DROP VIEW held;
DROP FUNCTION take(int);
