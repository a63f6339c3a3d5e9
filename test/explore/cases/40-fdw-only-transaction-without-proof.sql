-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 40:
-- a transaction whose only write is through postgres_fdw commits on a cut-off cluster without proof.
-- on 51d208a: O2(fdw-only): COMMIT of s0 succeeded although its lock x21492.4.l0 (xact, exclusive) was lost before it; the write (fdw) committed
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["acquire", 0, 0, "exclusive", "xact", "acquire"], ["cut", "a"], ["write", 0, "fdw"], ["commit", 0]]
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] SELECT zk_lock_acquire_xact('x21492.4.l0', '2s')
[s0@a] --   SELECT 1 (28,)
[nemesis] cut cluster a off ZooKeeper; wait 7 s (its session of 4 s expires)
[s0@a] INSERT INTO fledger (tag, lock, sess) VALUES ('4.s0.1', 'x21492.4.l0', 's0')
[s0@a] --   INSERT 0 1
[s0@a] COMMIT
[s0@a] --   COMMIT
[nemesis] reconnect cluster a to ZooKeeper
