-- bench.sql: server-side loops of zklock's benchmark (bench/run.sh loads it
-- into each cluster it starts).  They time zklock and pg_advisory_lock
-- inside the backend with clock_timestamp(), so the figures are the lock's
-- own cost, without the client's round trip to PostgreSQL.  kind is
-- 'zklock' (zk_lock_acquire / zk_lock_release, session scope) or
-- 'advisory' (pg_advisory_lock / pg_advisory_unlock on hashtext(name)).
-- Times are in milliseconds.

CREATE SCHEMA IF NOT EXISTS zkbench;

-- The loop behind shapes (a) to (c): WARMUP unmeasured acquire + release
-- cycles, then, from START_AT (NULL: as soon as the warm-up is done), cycles
-- for SECONDS or MAXN of them.  Returns a row per measured cycle, in order:
-- when it started, when the lock was granted (the call to release follows
-- at once) and when the release returned.  Rows are built once at the end,
-- so the loop does no arithmetic.
CREATE OR REPLACE FUNCTION zkbench.cycles(kind text, lockname text, warmup int,
	start_at timestamptz, seconds float8, maxn int)
RETURNS TABLE (started timestamptz, granted timestamptz, ended timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	key bigint := hashtext(lockname);
	zk boolean := kind = 'zklock';
	starts timestamptz[] := '{}';
	grants timestamptz[] := '{}';
	ends timestamptz[] := '{}';
	stop timestamptz;
	t0 timestamptz;
	g timestamptz;
	t1 timestamptz;
	n int := 0;
BEGIN
	FOR i IN 1..warmup LOOP
		IF zk THEN
			PERFORM zk_lock_acquire(lockname);
			PERFORM zk_lock_release(lockname);
		ELSE
			PERFORM pg_advisory_lock(key);
			PERFORM pg_advisory_unlock(key);
		END IF;
	END LOOP;
	IF start_at IS NOT NULL THEN
		PERFORM pg_sleep(greatest(0, extract(epoch FROM start_at - clock_timestamp())));
	END IF;
	stop := coalesce(start_at, clock_timestamp()) + make_interval(secs => seconds);
	WHILE n < maxn LOOP
		t0 := clock_timestamp();
		EXIT WHEN t0 >= stop;
		IF zk THEN
			PERFORM zk_lock_acquire(lockname);
		ELSE
			PERFORM pg_advisory_lock(key);
		END IF;
		g := clock_timestamp();
		IF zk THEN
			PERFORM zk_lock_release(lockname);
		ELSE
			PERFORM pg_advisory_unlock(key);
		END IF;
		t1 := clock_timestamp();
		n := n + 1;
		starts[n] := t0;
		grants[n] := g;
		ends[n] := t1;
	END LOOP;
	RETURN QUERY SELECT * FROM unnest(starts, grants, ends);
END
$$;

-- Shape (a): one session, one lock, acquire + release in a loop.  WARMUP
-- unmeasured cycles, then cycles for SECONDS or MAXN of them; returns each
-- cycle's latency.
CREATE OR REPLACE FUNCTION zkbench.uncontended(kind text, lockname text, seconds float8,
	warmup int, maxn int)
RETURNS float8[]
LANGUAGE sql AS $$
	SELECT coalesce(array_agg((extract(epoch FROM c.ended - c.started) * 1000)::float8 ORDER BY c.i), '{}')
	FROM zkbench.cycles(kind, lockname, warmup, NULL, seconds, maxn)
		WITH ORDINALITY AS c(started, granted, ended, i)
$$;

-- Shapes (b) and (c): WARMUP cycles, then from START_AT (common to every
-- session of the run) acquire + release for SECONDS.  Returns JSON: n, and
-- each cycle's grant and release time relative to START_AT (the release is
-- called as soon as the lock is granted: the same time).
CREATE OR REPLACE FUNCTION zkbench.loop(kind text, lockname text, warmup int,
	start_at timestamptz, seconds float8)
RETURNS text
LANGUAGE sql AS $$
	SELECT json_build_object('n', count(*),
		'granted', coalesce(array_agg(extract(epoch FROM c.granted - start_at) * 1000 ORDER BY c.i), '{}'),
		'released', coalesce(array_agg(extract(epoch FROM c.granted - start_at) * 1000 ORDER BY c.i), '{}'))::text
	FROM zkbench.cycles(kind, lockname, warmup, start_at, seconds, 2147483647)
		WITH ORDINALITY AS c(started, granted, ended, i)
$$;

-- Shape (d): wait for the lock once, release it as soon as it is granted;
-- returns "granted released" as Unix epoch milliseconds.
CREATE OR REPLACE FUNCTION zkbench.wait_once(lockname text)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	g timestamptz;
	r timestamptz;
BEGIN
	PERFORM zk_lock_acquire(lockname);
	g := clock_timestamp();
	r := clock_timestamp();
	PERFORM zk_lock_release(lockname);
	RETURN (extract(epoch FROM g) * 1000)::text || ' ' || (extract(epoch FROM r) * 1000)::text;
END
$$;

-- Shape (e): take N distinct session locks PREFIX1..PREFIXN and keep them.
-- Returns JSON: total time, and the time of the first and of the last
-- tenth of the acquires (a growing per-lock cost shows as last > first).
CREATE OR REPLACE FUNCTION zkbench.acquire_many(prefix text, n int)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	tenth int := greatest(n / 10, 1);
	t0 timestamptz := clock_timestamp();
	first_end timestamptz;
	last_start timestamptz;
BEGIN
	FOR i IN 1..n LOOP
		IF i = n - tenth + 1 THEN
			last_start := clock_timestamp();
		END IF;
		PERFORM zk_lock_acquire(prefix || i);
		IF i = tenth THEN
			first_end := clock_timestamp();
		END IF;
	END LOOP;
	RETURN json_build_object(
		'total_ms', extract(epoch FROM clock_timestamp() - t0) * 1000,
		'first_tenth_ms', extract(epoch FROM first_end - t0) * 1000,
		'last_tenth_ms', extract(epoch FROM clock_timestamp() - last_start) * 1000)::text;
END
$$;

-- Shape (e): give back every session lock; returns the call's duration
-- (releases do not wait for ZooKeeper: run.sh also times until every
-- slot is free).
CREATE OR REPLACE FUNCTION zkbench.release_all()
RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	PERFORM zk_lock_release_all();
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$$;
