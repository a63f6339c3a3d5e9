-- basic: acquire, try, release, tokens, paths and the zk_locks view
SELECT zk_lock_acquire('abc.json') > 0 AS granted;
SELECT zk_lock_token('abc.json') = (SELECT fencing_token FROM zk_locks WHERE name = 'abc.json') AS token_matches;
SELECT pid = pg_backend_pid() AS mine, database = current_database() AS db, name, mode, scope, state,
       znode LIKE '/zklock/abc.json/\_c\_%-lock-%' AS znode_layout, granted_at >= requested_at AS granted_later
FROM zk_locks;
-- the same backend stacks instead of waiting on itself
SELECT zk_lock_try('abc.json');
SELECT zk_lock_release('abc.json');
SELECT zk_lock_release('abc.json');
SELECT zk_lock_release('abc.json');
SELECT zk_lock_token('abc.json') IS NULL AS no_token;
SELECT count(*) AS holds FROM zk_locks WHERE state <> 'releasing';
-- a free lock is taken by a try
SELECT zk_lock_try('free');
SELECT name, state FROM zk_locks WHERE state <> 'releasing';
SELECT zk_lock_release_all();
SELECT count(*) AS holds FROM zk_locks WHERE state <> 'releasing';
-- successive holders get rising fencing tokens
CREATE TEMP TABLE tokens (t bigint);
INSERT INTO tokens SELECT zk_lock_acquire('seq');
SELECT zk_lock_release('seq');
INSERT INTO tokens SELECT zk_lock_acquire('seq');
SELECT zk_lock_release('seq');
SELECT count(DISTINCT t) = 2 AND min(t) < max(t) AS rising FROM tokens;
-- where other ZooKeeper clients find a lock
SELECT zk_lock_path('abc.json');
-- counters move
SELECT acquired >= 4 AS acquired, released >= 1 AS released FROM zk_status();
