-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 40:
-- a cursor's lost hold given back when its FETCH fails in a savepoint: the transaction commits.
-- on 51d208a: O2(local,exclusive,cursor): COMMIT of s0 succeeded although its lock x10543.2.l1 (xact, exclusive) was lost before it; the write (local) committed
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["open_cursor", 0, 1, true], ["write", 0, "local"], ["nemesis_delete", 0, 1], ["fetch_in_savepoint", 0]]
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] DECLARE c1 CURSOR FOR SELECT 1 / (2 - i) AS q, zk_lock_acquire_xact('x10543.2.l1', '2s') AS t FROM generate_series(1, 3) i
[s0@a] --   DECLARE CURSOR
[s0@a] FETCH 1 FROM c1
[s0@a] --   FETCH 1 (1, 14)
[s0@a] INSERT INTO ledger (tag, lock, sess) VALUES ('2.s0.1', 'x10543.2.l1', 's0')
[s0@a] --   INSERT 0 1
[nemesis] delete s0's node of x10543.2.l1 (exclusive): _c_93a80a75-549a-4532-8b6a-4364fbc3ed77-lock-0000000000
[s0@a] SAVEPOINT sp0
[s0@a] --   SAVEPOINT
[s0@a] FETCH 1 FROM c1
[s0@a] --   ERROR 22012: division by zero
[s0@a] ROLLBACK TO sp0
[s0@a] --   ROLLBACK
[s0@a] COMMIT
[s0@a] --   COMMIT
