-- stats: zk_lock_stats counts each lock's requests and holds by kind and
-- scope; one lock's or every lock's figures can be reset; only the roles
-- granted it (and pg_read_all_stats) read it; the table keeps at most
-- zklock.stats_max locks, the least used going first
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'zk_lock_stats'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'zk_lock_stats_info'::regclass AND attnum > 0 ORDER BY attnum;
SELECT zk_lock_stats_reset();
SELECT entries, evicted, stats_reset > now() - interval '1 hour' AS reset_recently FROM zk_lock_stats_info;

-- two session holds stacked (one hold, two acquisitions), a transaction
-- hold, a shared hold and a semaphore's permit
SELECT zk_lock_acquire('st.a') > 0 AS a1, zk_lock_acquire('st.a') > 0 AS a2;
SELECT pg_sleep(0.01);
SELECT zk_lock_release('st.a'), zk_lock_release('st.a');
BEGIN;
SELECT zk_lock_acquire_xact('st.a') > 0 AS ax;
COMMIT;
SELECT zk_lock_try_shared('st.a'), zk_lock_release_shared('st.a');
SELECT zk_semaphore_try('st.sem', 2), zk_semaphore_release('st.sem');
SELECT name, kind, acquired_session, acquired_xact, granted_at_once, waited,
       total_wait_time, mean_wait_time, max_wait_time, holds,
       total_hold_time > 0 AS held_some_time, max_hold_time <= total_hold_time AS max_within_total,
       timeouts, cancels, deadlocks, losses, revocations, hold_limit_expiries
  FROM zk_lock_stats ORDER BY name, kind;
SELECT entries FROM zk_lock_stats_info;
-- README's "which lock waits most" (none waited here)
SELECT name, kind, waited, round(total_wait_time) AS wait_ms,
       round(mean_wait_time::numeric, 1) AS mean_ms, round(max_wait_time) AS max_ms,
       timeouts, deadlocks
  FROM zk_lock_stats
 WHERE waited > 0
 ORDER BY total_wait_time DESC
 LIMIT 10;

-- zklock.track_stats = off counts nothing
SET zklock.track_stats = off;
SELECT zk_lock_try('st.a'), zk_lock_release('st.a');
SELECT zk_lock_try('st.off'), zk_lock_release('st.off');
RESET zklock.track_stats;
SELECT name, kind, acquired_session, holds FROM zk_lock_stats ORDER BY name, kind;

-- a reset of one lock takes each of its kinds; of all, the rest
SELECT zk_lock_stats_reset('st.a');
SELECT name, kind FROM zk_lock_stats ORDER BY name, kind;
SELECT zk_lock_stats_reset('no such lock');
SELECT zk_lock_stats_reset(repeat('x', 300));
SELECT name, kind FROM zk_lock_stats ORDER BY name, kind;
SELECT zk_lock_stats_reset();
SELECT count(*) FROM zk_lock_stats;

-- privileges: nothing for PUBLIC; reading for pg_read_all_stats and for
-- the roles granted it, as zk_locks; the reset only where granted
CREATE ROLE zkl_stats_nobody;
CREATE ROLE zkl_stats_reader IN ROLE pg_read_all_stats;
CREATE ROLE zkl_stats_monitor;
CREATE ROLE zkl_stats_ops;
GRANT EXECUTE ON FUNCTION zk_lock_stats_internal(), zk_lock_stats_info_internal() TO zkl_stats_monitor;
GRANT SELECT ON zk_lock_stats, zk_lock_stats_info TO zkl_stats_monitor;
GRANT EXECUTE ON FUNCTION zk_lock_stats_reset(text) TO zkl_stats_ops;
SET ROLE zkl_stats_nobody;
SELECT count(*) FROM zk_lock_stats;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM zk_lock_stats_info;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM zk_lock_stats_internal();
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_stats_reset();
\echo :LAST_ERROR_SQLSTATE
SET ROLE zkl_stats_reader;
SELECT count(*) FROM zk_lock_stats;
SELECT entries FROM zk_lock_stats_info;
SELECT zk_lock_stats_reset();
\echo :LAST_ERROR_SQLSTATE
SET ROLE zkl_stats_monitor;
SELECT count(*) FROM zk_lock_stats;
SELECT entries FROM zk_lock_stats_info;
SELECT zk_lock_stats_reset('st.a');
\echo :LAST_ERROR_SQLSTATE
SET zklock.track_stats = off;
\echo :LAST_ERROR_SQLSTATE
SET ROLE zkl_stats_ops;
SELECT zk_lock_stats_reset('st.a');
SELECT zk_lock_stats_reset();
SELECT count(*) FROM zk_lock_stats;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
REVOKE ALL ON FUNCTION zk_lock_stats_internal(), zk_lock_stats_info_internal() FROM zkl_stats_monitor;
REVOKE ALL ON zk_lock_stats, zk_lock_stats_info FROM zkl_stats_monitor;
REVOKE ALL ON FUNCTION zk_lock_stats_reset(text) FROM zkl_stats_ops;
DROP ROLE zkl_stats_nobody, zkl_stats_reader, zkl_stats_monitor, zkl_stats_ops;

-- the bound: past zklock.stats_max locks the least used go, 5% at once,
-- and the eviction counter says how many; a lock used more stays
SELECT zk_lock_stats_reset();
SELECT bool_and(zk_lock_try('st.busy') AND zk_lock_release('st.busy')) FROM generate_series(1, 3);
SELECT count(*) FILTER (WHERE zk_lock_try('st.bound.' || i) AND zk_lock_release('st.bound.' || i)) =
       current_setting('zklock.stats_max')::int + 20 AS all_granted
  FROM generate_series(1, current_setting('zklock.stats_max')::int + 20) i;
SELECT entries <= current_setting('zklock.stats_max')::int AS within_bound,
       entries + evicted = current_setting('zklock.stats_max')::int + 21 AS every_lock_kept_or_evicted,
       evicted >= 21 AS evicted_enough,
       evicted % (current_setting('zklock.stats_max')::int / 20) = 0 AS evicted_in_batches
  FROM zk_lock_stats_info;
SELECT name, acquired_session FROM zk_lock_stats WHERE name = 'st.busy';
SELECT count(*) = 0 AS oldest_gone FROM zk_lock_stats WHERE name = 'st.bound.1';
SELECT zk_lock_stats_reset();
SELECT entries, evicted FROM zk_lock_stats_info;
