-- bench.sql: server-side loops of zklock's benchmark (bench/run.sh loads it
-- into each cluster it starts).  They time zklock and pg_advisory_lock
-- inside the backend with clock_timestamp(), so the figures are the lock's
-- own cost, without the client's round trip to PostgreSQL.  kind is
-- 'zklock' (zk_lock_acquire / zk_lock_release, session scope) or
-- 'advisory' (pg_advisory_lock / pg_advisory_unlock on hashtext(name)).
-- Times are in milliseconds.

CREATE SCHEMA IF NOT EXISTS zkbench;

-- Shape (a): one session, one lock, acquire + release in a loop.  WARMUP
-- unmeasured cycles, then cycles for SECONDS or MAXN of them; returns each
-- cycle's latency.
CREATE OR REPLACE FUNCTION zkbench.uncontended(kind text, lockname text, seconds float8,
	warmup int, maxn int)
RETURNS float8[]
LANGUAGE plpgsql AS $$
DECLARE
	key bigint := hashtext(lockname);
	zk boolean := kind = 'zklock';
	lat float8[] := '{}';
	stop timestamptz;
	t0 timestamptz;
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
	stop := clock_timestamp() + make_interval(secs => seconds);
	WHILE n < maxn LOOP
		t0 := clock_timestamp();
		EXIT WHEN t0 >= stop;
		IF zk THEN
			PERFORM zk_lock_acquire(lockname);
			PERFORM zk_lock_release(lockname);
		ELSE
			PERFORM pg_advisory_lock(key);
			PERFORM pg_advisory_unlock(key);
		END IF;
		t1 := clock_timestamp();
		n := n + 1;
		lat[n] := extract(epoch FROM t1 - t0) * 1000;
	END LOOP;
	RETURN lat;
END
$$;

-- Shapes (b) and (c): WARMUP cycles, then from START_AT (common to every
-- session of the run) acquire + release for SECONDS.  Returns JSON: n, and
-- each cycle's grant and release time relative to START_AT.
CREATE OR REPLACE FUNCTION zkbench.loop(kind text, lockname text, warmup int,
	start_at timestamptz, seconds float8)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	key bigint := hashtext(lockname);
	zk boolean := kind = 'zklock';
	granted timestamptz[] := '{}';
	released timestamptz[] := '{}';
	stop timestamptz := start_at + make_interval(secs => seconds);
	g timestamptz;
	r timestamptz;
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
	PERFORM pg_sleep(greatest(0, extract(epoch FROM start_at - clock_timestamp())));
	WHILE clock_timestamp() < stop LOOP
		IF zk THEN
			PERFORM zk_lock_acquire(lockname);
		ELSE
			PERFORM pg_advisory_lock(key);
		END IF;
		g := clock_timestamp();
		r := clock_timestamp();
		IF zk THEN
			PERFORM zk_lock_release(lockname);
		ELSE
			PERFORM pg_advisory_unlock(key);
		END IF;
		n := n + 1;
		granted[n] := g;
		released[n] := r;
	END LOOP;
	-- Converted once at the end, so the loop does no arithmetic.
	RETURN json_build_object('n', n,
		'granted', (SELECT coalesce(array_agg(extract(epoch FROM t - start_at) * 1000 ORDER BY i), '{}')
					FROM unnest(granted) WITH ORDINALITY AS u(t, i)),
		'released', (SELECT coalesce(array_agg(extract(epoch FROM t - start_at) * 1000 ORDER BY i), '{}')
					 FROM unnest(released) WITH ORDINALITY AS u(t, i)))::text;
END
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
