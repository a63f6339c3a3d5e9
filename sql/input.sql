-- input: bad arguments get clear errors and change nothing; names encode safely
-- Every error expected here is followed by its SQLSTATE (\echo :LAST_ERROR_SQLSTATE).
\set VERBOSITY default
SELECT zk_lock_acquire('');
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_try(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire(repeat('x', 256));
\echo :LAST_ERROR_SQLSTATE
SELECT length(zk_lock_path(repeat('x', 255))) AS longest_ok;
SELECT zk_lock_acquire('neg', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_release('');
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire_shared(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_try_shared('');
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_release_shared('never-held');
SELECT zk_lock_acquire(ARRAY[]::text[]);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire(ARRAY['a', NULL]);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire(ARRAY[['a', 'b'], ['c', 'd']]);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire_xact(NULL::text[]);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire(ARRAY['ok', repeat('x', 256)]);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS no_contenders FROM zk_lock_contenders('never-used');
SET zklock.exclusive_layout = 'nonsense';
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS nothing_left FROM zk_locks;

-- names that could escape or collide map to distinct, plain components
SELECT n AS name, zk_lock_path(n) AS path
FROM unnest(ARRAY['/', 'a/b', '../x', '.', '..', '.hidden', 'a.b', '%', '%2F', 'tab' || chr(9),
                  'nl' || chr(10), 'café', '鍵', 'zookeeper', 'UPPER-lower_0']) AS n;

-- property test: random names over a hostile alphabet never collide and never
-- leave their directory; decoding gives the name back
CREATE FUNCTION zkl_decode(p text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	s text := substr(p, length('/zklock/') + 1);
	out bytea := '';
	i int := 1;
BEGIN
	WHILE i <= length(s) LOOP
		IF substr(s, i, 1) = '%' THEN
			out := out || decode(substr(s, i + 1, 2), 'hex');
			i := i + 3;
		ELSE
			out := out || convert_to(substr(s, i, 1), 'UTF8');
			i := i + 1;
		END IF;
	END LOOP;
	RETURN convert_from(out, 'UTF8');
END $$;
SELECT setseed(0.42);
CREATE TEMP TABLE names AS
SELECT DISTINCT string_agg(substr('/.%' || chr(1) || chr(9) || chr(127) || 'aZ09_-é鍵 ',
                                  (random() * 15)::int + 1, 1), '') AS name
FROM generate_series(1, 20000) AS g(i),
     LATERAL generate_series(1, 1 + (g.i % 12)) AS c(j)
GROUP BY g.i;
SELECT count(*) > 5000 AS many_names FROM names WHERE name <> '';
SELECT count(*) = count(DISTINCT zk_lock_path(name)) AS no_collisions,
       bool_and(zk_lock_path(name) ~ '^/zklock/[A-Za-z0-9_%-][A-Za-z0-9_.%-]*$') AS plain_components,
       bool_and(zkl_decode(zk_lock_path(name)) = name) AS decodes_back
FROM names WHERE name <> '';
DROP FUNCTION zkl_decode(text);

-- a backend that asks for too many locks is stopped before it starves others
SET zklock.max_locks_per_backend = 2;
SELECT zk_lock_acquire('cap1') > 0, zk_lock_acquire('cap2') > 0;
SELECT zk_lock_acquire('cap3');
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire('cap1') > 0 AS reentrant_still_fine;
RESET zklock.max_locks_per_backend;
SELECT zk_lock_release_all();
