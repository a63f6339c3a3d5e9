-- hostile_input: every SQL entry point fed NULLs, empty and oversized names,
-- odd arrays, every ASCII byte, multibyte text and extreme timeouts.  Each
-- case prints its result or its SQLSTATE and message, and after each group
-- nothing is left held, waiting or releasing.
\set VERBOSITY default

-- The result of one statement as text, or 'SQLSTATE message' if it failed.
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	EXECUTE sql INTO r;
	RETURN coalesce(r, '(null)');
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

-- Entries of zk_locks once the background releases are done (they do not
-- wait for ZooKeeper): waits, at most 30 s, while any entry is releasing.
CREATE FUNCTION pg_temp.locks_left() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM zk_locks WHERE state = 'releasing');
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN (SELECT count(*) FROM zk_locks);
END $$;

-- NULL where a name or a set of names is expected
SELECT q, pg_temp.try(q) AS result FROM unnest(ARRAY[
	'SELECT zk_lock_acquire(NULL::text)',
	'SELECT zk_lock_acquire(NULL::text, ''1s'')',
	'SELECT zk_lock_acquire_xact(NULL::text)',
	'SELECT zk_lock_try(NULL)',
	'SELECT zk_lock_try_xact(NULL)',
	'SELECT zk_lock_release(NULL)',
	'SELECT zk_lock_acquire_shared(NULL)',
	'SELECT zk_lock_acquire_xact_shared(NULL)',
	'SELECT zk_lock_try_shared(NULL)',
	'SELECT zk_lock_try_xact_shared(NULL)',
	'SELECT zk_lock_release_shared(NULL)',
	'SELECT zk_lock_acquire(NULL::text[])',
	'SELECT zk_lock_acquire(NULL::text[], ''1s'')',
	'SELECT zk_lock_acquire_xact(NULL::text[])',
	'SELECT count(*) FROM zk_lock_contenders(NULL)',
	'SELECT zk_lock_token(NULL)',
	'SELECT zk_lock_check(NULL)',
	'SELECT zk_lock_path(NULL)'
]) AS q;
-- a NULL timeout means lock_timeout (0: forever): a free lock is granted
SELECT q, pg_temp.try(q) AS result FROM unnest(ARRAY[
	'SELECT zk_lock_acquire(''null-timeout'', NULL) > 0',
	'SELECT zk_lock_acquire_xact(''null-timeout-x'', NULL) > 0',
	'SELECT zk_lock_acquire_shared(''null-timeout'', NULL) > 0',
	'SELECT zk_lock_acquire_xact_shared(''null-timeout-x'', NULL) > 0',
	'SELECT cardinality(zk_lock_acquire(ARRAY[''null-timeout-a'', ''null-timeout-b''], NULL))',
	'SELECT cardinality(zk_lock_acquire_xact(ARRAY[''null-timeout-c''], NULL))',
	'SELECT zk_lock_release(''null-timeout'')',
	'SELECT zk_lock_release_shared(''null-timeout'')',
	'SELECT zk_lock_release(''null-timeout-a'')',
	'SELECT zk_lock_release(''null-timeout-b'')'
]) AS q;
SELECT pg_temp.locks_left() AS nothing_left;

-- the empty name
SELECT q, pg_temp.try(q) AS result FROM unnest(ARRAY[
	'SELECT zk_lock_acquire('''')',
	'SELECT zk_lock_acquire('''', ''1s'')',
	'SELECT zk_lock_acquire_xact('''')',
	'SELECT zk_lock_try('''')',
	'SELECT zk_lock_try_xact('''')',
	'SELECT zk_lock_release('''')',
	'SELECT zk_lock_acquire_shared('''')',
	'SELECT zk_lock_acquire_xact_shared('''')',
	'SELECT zk_lock_try_shared('''')',
	'SELECT zk_lock_try_xact_shared('''')',
	'SELECT zk_lock_release_shared('''')',
	'SELECT zk_lock_acquire(ARRAY[''''])',
	'SELECT zk_lock_acquire_xact(ARRAY[''ok'', ''''])',
	'SELECT count(*) FROM zk_lock_contenders('''')',
	'SELECT zk_lock_token('''')',
	'SELECT zk_lock_check('''')',
	'SELECT zk_lock_path('''')'
]) AS q;
SELECT pg_temp.locks_left() AS nothing_left;

-- names of 256 bytes (255 is the limit), in ASCII and in two-byte characters
SELECT q, pg_temp.try(q) AS result FROM unnest(ARRAY[
	'SELECT zk_lock_acquire(repeat(''x'', 256))',
	'SELECT zk_lock_acquire(repeat(''x'', 256), ''1s'')',
	'SELECT zk_lock_acquire_xact(repeat(''x'', 256))',
	'SELECT zk_lock_try(repeat(''x'', 256))',
	'SELECT zk_lock_try_xact(repeat(''x'', 256))',
	'SELECT zk_lock_release(repeat(''x'', 256))',
	'SELECT zk_lock_acquire_shared(repeat(''x'', 256))',
	'SELECT zk_lock_acquire_xact_shared(repeat(''x'', 256))',
	'SELECT zk_lock_try_shared(repeat(''x'', 256))',
	'SELECT zk_lock_try_xact_shared(repeat(''x'', 256))',
	'SELECT zk_lock_release_shared(repeat(''x'', 256))',
	'SELECT zk_lock_acquire(ARRAY[repeat(''x'', 256)])',
	'SELECT zk_lock_acquire_xact(ARRAY[''ok'', repeat(''x'', 256)])',
	'SELECT count(*) FROM zk_lock_contenders(repeat(''x'', 256))',
	'SELECT zk_lock_token(repeat(''x'', 256))',
	'SELECT zk_lock_check(repeat(''x'', 256))',
	'SELECT zk_lock_path(repeat(''x'', 256))',
	'SELECT zk_lock_try(repeat(''é'', 128))',
	'SELECT zk_lock_path(repeat(''é'', 127) || ''xy'')'
]) AS q;
SELECT pg_temp.locks_left() AS nothing_left;

-- names of exactly 255 bytes work everywhere, also when every byte is
-- escaped (a 765-character ZooKeeper path component)
SELECT kind, octet_length(n) AS bytes,
       zk_lock_try(n) AS try,
       zk_lock_token(n) > 0 AS token,
       zk_lock_check(n) AS check,
       (SELECT string_agg(state, ',') FROM zk_lock_contenders(n)) AS contenders,
       length(zk_lock_path(n)) AS path_length,
       zk_lock_release(n) AS released
FROM (VALUES ('x * 255', repeat('x', 255)), ('é * 127 || x', repeat('é', 127) || 'x'),
             ('chr(1) * 255', repeat(chr(1), 255)), ('% * 255', repeat('%', 255)),
             ('. * 255', repeat('.', 255)), ('/ * 255', repeat('/', 255))) AS v(kind, n);
SELECT zk_lock_acquire_shared(repeat('y', 255)) > 0 AS shared_255,
       zk_lock_release_shared(repeat('y', 255)) AS released;
SELECT pg_temp.locks_left() AS nothing_left;

-- arrays: empty, with NULLs, multi-dimensional, odd bounds, duplicates
SELECT q, pg_temp.try(q) AS result FROM unnest(ARRAY[
	'SELECT zk_lock_acquire(ARRAY[]::text[])',
	'SELECT zk_lock_acquire_xact(ARRAY[]::text[])',
	'SELECT zk_lock_acquire(''{}''::text[], ''1s'')',
	'SELECT zk_lock_acquire(ARRAY[NULL]::text[])',
	'SELECT zk_lock_acquire(ARRAY[''arr-a'', NULL])',
	'SELECT zk_lock_acquire_xact(ARRAY[NULL, ''arr-a''])',
	'SELECT zk_lock_acquire(ARRAY[NULL, NULL]::text[], ''0'')',
	'SELECT zk_lock_acquire(ARRAY[[''arr-a'', ''arr-b''], [''arr-c'', ''arr-d'']])',
	'SELECT zk_lock_acquire_xact(ARRAY[[''arr-a'']])',
	'SELECT zk_lock_acquire(''{{{arr-a}}}''::text[])',
	'SELECT zk_lock_acquire(''[5:6]={arr-b,arr-a}''::text[]) IS NOT NULL',
	'SELECT array_lower(zk_lock_acquire(''[5:6]={arr-b,arr-a}''::text[]), 1)',
	'SELECT zk_lock_release_all()',
	'SELECT count(DISTINCT t) FROM unnest(zk_lock_acquire(ARRAY[''arr-a'', ''arr-b'', ''arr-a'', ''arr-b'', ''arr-a''])) t',
	'SELECT zk_lock_release(''arr-a'')',
	'SELECT zk_lock_release(''arr-a'')',
	'SELECT zk_lock_release(''arr-b'')'
]) AS q;
SELECT pg_temp.locks_left() AS nothing_left;

-- a set's tokens are those of its names, in the order given
SELECT t = ARRAY[zk_lock_token('arr-b'), zk_lock_token('arr-a'), zk_lock_token('arr-b')] AS tokens_in_order
FROM zk_lock_acquire(ARRAY['arr-b', 'arr-a', 'arr-b']) AS t;
SELECT zk_lock_release_all();
SELECT pg_temp.locks_left() AS nothing_left;

-- 10,000 names at once: more than zklock.max_locks_per_backend allows (the set
-- is refused before anything is sent), then more than the cluster's
-- zklock.max_locks; either way 53400 and nothing held
SELECT pg_temp.try('SELECT cardinality(zk_lock_acquire(array_agg(''many-'' || i))) FROM generate_series(1, 10000) i') AS session_set;
SELECT pg_temp.try('SELECT cardinality(zk_lock_acquire_xact(array_agg(''many-'' || i), ''30s'')) FROM generate_series(1, 10000) i') AS xact_set;
SELECT pg_temp.locks_left() AS nothing_left;
SET zklock.max_locks_per_backend = 100000;
SELECT pg_temp.try('SELECT cardinality(zk_lock_acquire(array_agg(''many-'' || i))) FROM generate_series(1, 10000) i') AS session_set;
RESET zklock.max_locks_per_backend;
SELECT pg_temp.locks_left() AS nothing_left;
-- the same name 10,000 times is one lock
SELECT cardinality(t) AS n, (SELECT count(DISTINCT x) FROM unnest(t) x) AS distinct_tokens
FROM zk_lock_acquire(array_fill('one-of-many'::text, ARRAY[10000])) AS t;
SELECT zk_lock_release('one-of-many'), zk_lock_release('one-of-many') AS only_once;
SELECT pg_temp.locks_left() AS nothing_left;

-- every byte value 1..127 as a one-byte name, and inside a longer one:
-- tried, seen by the worker in ZooKeeper and released
DO $$
DECLARE
	bad text := '';
	name text;
BEGIN
	FOR n IN 1..127 LOOP
		FOREACH name IN ARRAY ARRAY[chr(n), 'a' || chr(n) || 'b'] LOOP
			IF NOT zk_lock_try(name) THEN
				bad := bad || format(' try(%s)', n);
			ELSIF (SELECT count(*) FROM zk_lock_contenders(name) WHERE state = 'held') <> 1 THEN
				bad := bad || format(' contenders(%s)', n);
			ELSIF NOT zk_lock_release(name) THEN
				bad := bad || format(' release(%s)', n);
			END IF;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'bytes 1..127: %', CASE WHEN bad = '' THEN 'all fine' ELSE bad END;
END $$;
SELECT count(DISTINCT zk_lock_path(chr(n))) AS distinct_paths,
       bool_and(zk_lock_path(chr(n)) ~ '^/zklock/[A-Za-z0-9_%-][A-Za-z0-9_.%-]*$') AS plain_components
FROM generate_series(1, 127) n;
-- the same through the xact and shared variants (in two halves: the
-- transaction holds of one statement stay until it ends)
SELECT count(*) FILTER (WHERE zk_lock_try_xact(chr(n))) AS try_xact,
       count(*) FILTER (WHERE zk_lock_try_shared(chr(n))) AS try_shared,
       count(*) FILTER (WHERE zk_lock_release_shared(chr(n))) AS released_shared
FROM generate_series(1, 63) n;
SELECT count(*) FILTER (WHERE zk_lock_try_xact_shared(chr(n))) AS try_xact_shared,
       count(*) FILTER (WHERE zk_lock_acquire_xact(chr(n), '0') > 0) AS acquire_xact
FROM generate_series(64, 95) n;
SELECT count(*) FILTER (WHERE zk_lock_try_xact_shared(chr(n))) AS try_xact_shared,
       count(*) FILTER (WHERE zk_lock_acquire_xact(chr(n), '0') > 0) AS acquire_xact
FROM generate_series(96, 127) n;
SELECT pg_temp.locks_left() AS nothing_left;

-- multibyte names: distinct locks, each its own directory (unaligned: psql
-- pads invisible characters to a width that differs between majors)
\pset format unaligned
SELECT n AS name, octet_length(n) AS bytes, zk_lock_try(n) AS try,
       (SELECT count(*) FROM zk_lock_contenders(n)) AS contenders,
       zk_lock_path(n) AS path
FROM unnest(ARRAY['café', 'cafe' || U&'\0301', '鍵', '🔒', U&'\FEFF', U&'\2028',
                  U&'\00A0', 'ключ', 'עברית', U&'\FFFF', U&'\+10FFFF']) AS n;
\pset format aligned
SELECT count(*) FILTER (WHERE state = 'held') AS held, count(DISTINCT name) AS names FROM zk_locks;
SELECT zk_lock_release_all();
SELECT pg_temp.locks_left() AS nothing_left;

-- timeouts: huge ones wait forever (a free lock is granted at once),
-- negative ones are refused, '0' (and '0.4 microseconds', which the interval
-- type rounds to 0) is a try, and a short positive one, which bounds the wait
-- for another holder, still gets a free lock
SELECT t AS timeout,
       pg_temp.try(format('SELECT zk_lock_acquire(''tmo'', %L) > 0 AND zk_lock_release(''tmo'')', t))
         AS acquired_and_released
FROM unnest(ARRAY['300000 years', '2562047788 hours', '178956970 years', '2147483647 days',
                  '2147483647 days 2147483647 hours', '178956970 years -2147483648 days',
                  '-300000 years', '-1 microsecond', '-178956970 years', '-2147483648 days',
                  '1 month -40 days', '1 day -86400.000001 seconds',
                  '0.4 microseconds', '0', '1 microsecond', '0.0015 seconds',
                  '1 month -30 days', '1 day -86399 seconds']) AS t;
-- the other entry points that take a timeout
SELECT q, pg_temp.try(q) AS result FROM unnest(ARRAY[
	'SELECT zk_lock_acquire_xact(''tmo'', ''300000 years'') > 0',
	'SELECT zk_lock_acquire_shared(''tmo'', ''300000 years'') > 0',
	'SELECT zk_lock_acquire_xact_shared(''tmo'', ''2562047788 hours'') > 0',
	'SELECT cardinality(zk_lock_acquire(ARRAY[''tmo'', ''tmo2''], ''300000 years''))',
	'SELECT cardinality(zk_lock_acquire_xact(ARRAY[''tmo'', ''tmo2''], ''2562047788 hours''))',
	'SELECT zk_lock_acquire_xact(''tmo'', ''-300000 years'') > 0',
	'SELECT zk_lock_acquire_shared(''tmo'', ''-1 microsecond'') > 0',
	'SELECT zk_lock_acquire_xact_shared(''tmo'', ''1 month -40 days'') > 0',
	'SELECT cardinality(zk_lock_acquire(ARRAY[''tmo''], ''-300000 years''))',
	'SELECT cardinality(zk_lock_acquire_xact(ARRAY[''tmo''], ''-1 microsecond''))',
	'SELECT zk_lock_acquire_shared(''tmo'', ''0.4 microseconds'') > 0',
	'SELECT zk_lock_release_shared(''tmo'')',
	'SELECT zk_lock_release_shared(''tmo'')',
	'SELECT zk_lock_release(''tmo'')',
	'SELECT zk_lock_release(''tmo2'')'
]) AS q;
-- a NULL timeout under a short lock_timeout: a free lock is still granted
SET lock_timeout = '1ms';
SELECT zk_lock_acquire('tmo', NULL) > 0 AS granted, zk_lock_release('tmo');
RESET lock_timeout;
SELECT pg_temp.locks_left() AS nothing_left;
