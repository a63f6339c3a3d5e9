-- old_shapes: a database whose extension is still at an older version calls
-- this library through that version's declarations until ALTER EXTENSION
-- UPDATE runs.  Every C function of the extension that returns rows is
-- called through the declaration of each version from 1.0 on, and answers
-- rows of that declaration's columns; a declaration of a shape the library
-- does not know is refused, not filled with another's values.
DROP EXTENSION zklock;
CREATE EXTENSION zklock VERSION '1.0';
-- Each member function written in C that returns a record, called once: its
-- declared column count and the column count of the rows it returned (NULL
-- when it returned none).
CREATE FUNCTION pg_temp.shapes()
RETURNS TABLE (function text, declared int, returned int)
LANGUAGE plpgsql AS $$
DECLARE
	f record;
	r record;
BEGIN
	FOR f IN
		SELECT p.oid::regprocedure::text AS sig, p.proname,
		       (SELECT count(*) FROM unnest(p.proargmodes) m
		         WHERE m OPERATOR(pg_catalog.=) ANY (ARRAY['o', 't']::"char"[]))::int AS ncols,
		       p.pronargs
		FROM pg_proc p
		JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
		JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zklock'
		WHERE p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')
		  AND p.prorettype = 'record'::regtype
		ORDER BY 1
	LOOP
		function := f.sig;
		declared := f.ncols;
		returned := NULL;
		FOR r IN EXECUTE format('SELECT row_to_json(s) AS j FROM %s(%s) s', f.proname,
								CASE f.pronargs WHEN 0 THEN ''
								WHEN 1 THEN quote_literal(CASE WHEN f.proname LIKE 'zk_semaphore%'
																THEN 'shape.sem' ELSE 'shape.lock' END) END)
		LOOP
			returned := (SELECT count(*) FROM json_object_keys(r.j));
		END LOOP;
		RETURN NEXT;
	END LOOP;
END $$;
-- a lock held (and from 1.1 a semaphore), so that the listings have rows;
-- zk_waits_for() has none, no session waiting
SELECT zk_lock_acquire('shape.lock') > 0 AS held;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT * FROM pg_temp.shapes();
ALTER EXTENSION zklock UPDATE TO '1.1';
SELECT zk_semaphore_acquire('shape.sem', 2) > 0 AS held;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT * FROM pg_temp.shapes();
ALTER EXTENSION zklock UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT * FROM pg_temp.shapes();
ALTER EXTENSION zklock UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT * FROM pg_temp.shapes();
ALTER EXTENSION zklock UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT * FROM pg_temp.shapes();
ALTER EXTENSION zklock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT * FROM pg_temp.shapes();
SELECT zk_semaphore_release('shape.sem'), zk_lock_release('shape.lock');

-- Declarations of a shape no version has (the first two columns of each):
-- each C entry refuses them.
CREATE FUNCTION pg_temp.status_2(OUT state text, OUT session_id text)
RETURNS record AS '$libdir/zklock', 'zk_status' LANGUAGE C;
CREATE FUNCTION pg_temp.status_1_5_as_1_4(OUT state text, OUT session_id text)
RETURNS record AS '$libdir/zklock', 'zk_status_1_5' LANGUAGE C;
CREATE FUNCTION pg_temp.locks_2(OUT pid integer, OUT dbid oid)
RETURNS SETOF record AS '$libdir/zklock', 'zk_locks' LANGUAGE C;
CREATE FUNCTION pg_temp.contenders_2(name text, OUT "position" integer, OUT mode text)
RETURNS SETOF record AS '$libdir/zklock', 'zk_lock_contenders' LANGUAGE C;
CREATE FUNCTION pg_temp.semaphore_contenders_2(name text, OUT "position" integer, OUT role text)
RETURNS SETOF record AS '$libdir/zklock', 'zk_semaphore_contenders' LANGUAGE C;
CREATE FUNCTION pg_temp.waits_for_2(OUT waiter_cluster text, OUT waiter_pid integer)
RETURNS SETOF record AS '$libdir/zklock', 'zk_waits_for' LANGUAGE C;
CREATE FUNCTION pg_temp.lock_stats_2(OUT name text, OUT kind text)
RETURNS SETOF record AS '$libdir/zklock', 'zk_lock_stats' LANGUAGE C;
CREATE FUNCTION pg_temp.lock_stats_info_2(OUT entries bigint, OUT evicted bigint)
RETURNS record AS '$libdir/zklock', 'zk_lock_stats_info' LANGUAGE C;
-- What each answers: its rows, or its error's SQLSTATE and message.
CREATE FUNCTION pg_temp.outcome(call text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE 'SELECT count(*) FROM pg_temp.' || call;
	RETURN 'rows';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT call, pg_temp.outcome(call)
FROM unnest(ARRAY['status_2()', 'status_1_5_as_1_4()', 'locks_2()',
				  'contenders_2(''shape.lock'')', 'semaphore_contenders_2(''shape.sem'')',
				  'waits_for_2()', 'lock_stats_2()', 'lock_stats_info_2()']) AS call;
-- the error in full, with its hint, once
SELECT * FROM pg_temp.status_2();
\echo :LAST_ERROR_SQLSTATE
