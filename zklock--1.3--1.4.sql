/* zklock--1.3--1.4.sql: what zklock 1.4 adds to 1.3 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.4'" to load this file. \quit

-- Issue 34: zk_lock_stats, cumulative statistics per lock since the last
-- reset (the backends count them in shared memory; a clean restart keeps
-- them, a crash resets them).  Readable by pg_read_all_stats and by the
-- roles an administrator grants them to, as zk_locks; the reset is the
-- administrator's to grant, as zk_lock_revoke.
CREATE FUNCTION zk_lock_stats_internal(
	OUT name text,
	OUT kind text,
	OUT acquired_session bigint,
	OUT acquired_xact bigint,
	OUT granted_at_once bigint,
	OUT waited bigint,
	OUT total_wait_time double precision,
	OUT mean_wait_time double precision,
	OUT max_wait_time double precision,
	OUT holds bigint,
	OUT total_hold_time double precision,
	OUT max_hold_time double precision,
	OUT timeouts bigint,
	OUT cancels bigint,
	OUT deadlocks bigint,
	OUT losses bigint,
	OUT revocations bigint,
	OUT hold_limit_expiries bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_stats'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW zk_lock_stats AS
	SELECT * FROM zk_lock_stats_internal();

CREATE FUNCTION zk_lock_stats_info_internal(
	OUT entries bigint,
	OUT evicted bigint,
	OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'zk_lock_stats_info'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW zk_lock_stats_info AS
	SELECT * FROM zk_lock_stats_info_internal();

-- NULL: every lock's figures, the eviction counter too.
CREATE FUNCTION zk_lock_stats_reset(name text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_stats_reset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION zk_lock_stats_internal(), zk_lock_stats_info_internal(),
	zk_lock_stats_reset(text) FROM PUBLIC;
REVOKE ALL ON zk_lock_stats, zk_lock_stats_info FROM PUBLIC;
GRANT EXECUTE ON FUNCTION zk_lock_stats_internal(), zk_lock_stats_info_internal() TO pg_read_all_stats;
GRANT SELECT ON zk_lock_stats, zk_lock_stats_info TO pg_read_all_stats;
