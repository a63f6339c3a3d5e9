-- lifetimes: reentrancy, session vs transaction scope, savepoints, PREPARE
CREATE FUNCTION held(text) RETURNS text LANGUAGE sql AS
$$ SELECT coalesce((SELECT scope FROM zk_locks WHERE name = $1 AND pid = pg_backend_pid()
                    AND state = 'held'), 'not held') $$;

-- reentrant stacking: three acquires need three releases
SELECT zk_lock_acquire('r') > 0, zk_lock_acquire('r') > 0, zk_lock_acquire('r') > 0;
SELECT zk_lock_release('r'), zk_lock_release('r'), held('r');
SELECT zk_lock_release('r'), held('r');
SELECT zk_lock_release('r');

-- transaction scope ends at commit and at rollback
BEGIN;
SELECT zk_lock_acquire_xact('t') > 0 AS granted, held('t');
-- a transaction hold cannot be released by hand, like advisory locks
SELECT zk_lock_release('t');
COMMIT;
SELECT held('t');
BEGIN;
SELECT zk_lock_try_xact('t'), held('t');
ROLLBACK;
SELECT held('t');

-- session and transaction holds are counted apart
BEGIN;
SELECT zk_lock_acquire('m') > 0, zk_lock_acquire_xact('m') > 0, held('m');
COMMIT;
SELECT held('m');
SELECT zk_lock_release('m'), held('m');

-- rollback to a savepoint releases what was taken after it, and only that
BEGIN;
SELECT zk_lock_acquire_xact('s1') > 0;
SAVEPOINT a;
SELECT zk_lock_acquire_xact('s2') > 0, zk_lock_acquire_xact('s1') > 0;
SELECT zk_lock_acquire('s3') > 0;
ROLLBACK TO SAVEPOINT a;
SELECT held('s1') AS s1, held('s2') AS s2, held('s3') AS s3_session_survives;
SAVEPOINT b;
SELECT zk_lock_acquire_xact('s4') > 0;
RELEASE SAVEPOINT b;
SELECT held('s4') AS s4_after_release;
SAVEPOINT c;
ROLLBACK TO SAVEPOINT c;
SELECT held('s4') AS s4_after_unrelated_rollback;
COMMIT;
SELECT held('s1') AS s1, held('s4') AS s4, held('s3') AS s3;
SELECT zk_lock_release('s3');

-- an error in the transaction releases its transaction holds
BEGIN;
SELECT zk_lock_acquire_xact('e') > 0;
SELECT 1 / 0;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT held('e');

-- PREPARE TRANSACTION with transaction holds is refused
BEGIN;
SELECT zk_lock_acquire_xact('p') > 0;
PREPARE TRANSACTION 'zkl_p';
\echo :LAST_ERROR_SQLSTATE
SELECT held('p');
SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'zkl_p';
-- session holds do not stop a PREPARE
BEGIN;
SELECT zk_lock_acquire('q') > 0;
PREPARE TRANSACTION 'zkl_q';
COMMIT PREPARED 'zkl_q';
SELECT held('q');
SELECT zk_lock_release('q');

SELECT count(*) AS holds FROM zk_locks WHERE state <> 'releasing';
DROP FUNCTION held(text);
