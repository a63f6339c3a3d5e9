-- semaphore: permits, scopes, reentrancy and the view, in one session
CREATE FUNCTION sem_held(text) RETURNS text LANGUAGE sql AS
$$ SELECT coalesce((SELECT mode || ' ' || scope FROM zk_locks WHERE name = $1 AND pid = pg_backend_pid()
                    AND state = 'held'), 'not held') $$;

-- the permits must be given and positive
SELECT zk_semaphore_acquire('s', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_semaphore_acquire('s', -3);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_semaphore_try('s', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_semaphore_acquire(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_semaphore_acquire('s', 1, '-1s');
\echo :LAST_ERROR_SQLSTATE

-- a permit, reentrant like a lock; its token is its lease's czxid
SELECT zk_semaphore_acquire('s', 2) > 0 AS granted, sem_held('s');
SELECT zk_semaphore_try('s', 2) AS again, sem_held('s');
SELECT role, state, znode LIKE zk_lock_path('s') || '/leases/\_c\_%-lease-%' AS curator_lease,
       czxid = (SELECT fencing_token FROM zk_locks WHERE name = 's') AS token_is_czxid, client
FROM zk_semaphore_contenders('s');
SELECT zk_semaphore_release('s'), zk_semaphore_release('s'), sem_held('s');
SELECT zk_semaphore_release('s');
SELECT count(*) AS contenders_left FROM zk_semaphore_contenders('s');

-- a semaphore and a lock of one name are apart
SELECT zk_semaphore_acquire('both', 1) > 0, zk_lock_try('both');
SELECT zk_lock_release('both'), zk_semaphore_release('both');

-- transaction scope
BEGIN;
SELECT zk_semaphore_acquire_xact('x', 3) > 0 AS granted, sem_held('x');
SELECT zk_semaphore_try_xact('x', 3), sem_held('x');
SELECT zk_semaphore_release('x');
COMMIT;
SELECT sem_held('x');

-- zklock.max_hold_time and zklock.on_revoke are settings like the others
SHOW zklock.max_hold_time;
SET zklock.max_hold_time = '90s';
SHOW zklock.max_hold_time;
RESET zklock.max_hold_time;
SHOW zklock.on_revoke;
SET zklock.on_revoke = 'sometimes';
\echo :LAST_ERROR_SQLSTATE

-- zk_lock_verify: a holder's token holds, no other does
SELECT zk_lock_acquire('v') AS vtoken \gset
SELECT zk_lock_verify('v', :vtoken) AS holder, zk_lock_verify('v', :vtoken + 1) AS other,
       zk_lock_verify('nobody-holds-this', :vtoken) AS free_lock;
SELECT zk_lock_verify('v', NULL);
\echo :LAST_ERROR_SQLSTATE
-- zk_lock_revoke asks the holder; on_revoke = ignore keeps the lock
SELECT zk_lock_revoke('v') AS asked, zk_lock_revoke('nobody-holds-this') AS asked_of_free;
SELECT zk_lock_release('v');
