-- basic: acquire, try, release, tokens, paths and the zk_locks view
SELECT zk_lock_acquire('abc.json') > 0 AS granted;
-- zk_lock_token and zk_locks agree (that the token is the node's czxid, as
-- another ZooKeeper client sees it, is tested in test/t/002_fifo.pl)
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
CREATE TEMP TABLE tokens (holder int, t bigint);
INSERT INTO tokens SELECT 1, zk_lock_acquire('seq');
SELECT zk_lock_release('seq');
INSERT INTO tokens SELECT 2, zk_lock_acquire('seq');
SELECT zk_lock_release('seq');
SELECT (SELECT t FROM tokens WHERE holder = 1) < (SELECT t FROM tokens WHERE holder = 2) AS rising;
-- where other ZooKeeper clients find a lock
SELECT zk_lock_path('abc.json');
-- counters move
SELECT acquired >= 4 AS acquired, released >= 1 AS released FROM zk_status();
