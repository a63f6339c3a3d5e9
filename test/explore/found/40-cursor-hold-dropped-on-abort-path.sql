-- zklock explorer: a violation, found after 960 s (seed 45, batch 33)
-- V(l1): s1 held x19701.989.l1 while s0's transaction, which wrote under it, had not begun to commit; COMMIT then succeeded
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["open_cursor", 0, 1, false], ["fetch_in_savepoint", 0], ["acquire", 1, 1, "exclusive", "xact", "try"], ["write", 0, "local"]]
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] DECLARE c1 CURSOR FOR SELECT zk_lock_acquire_xact('x19701.989.l1', '2s') AS t, 1 / (2 - i) AS q FROM generate_series(1, 3) i
[s0@a] --   DECLARE CURSOR
[s0@a] FETCH 1 FROM c1
[s0@a] --   FETCH 1 (2880, 1)
[s0@a] SAVEPOINT sp0
[s0@a] --   SAVEPOINT
[s0@a] FETCH 1 FROM c1
[s0@a] --   ERROR 22012: division by zero
[s0@a] ROLLBACK TO sp0
[s0@a] --   ROLLBACK
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] SELECT zk_lock_try_xact('x19701.989.l1')
[s1@a] --   SELECT 1 (True,)
[s0@a] INSERT INTO ledger (tag, lock, sess) VALUES ('989.s0.1', 'x19701.989.l1', 's0')
[s0@a] --   INSERT 0 1
[s0@a] COMMIT
[s0@a] --   COMMIT
