-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 40:
-- the COMMIT waits for the NOTIFY queue lock after its proof; the cluster is cut off, the lock granted elsewhere, the COMMIT then succeeds.
-- on 51d208a: V-commit(notify): s2 was granted x26737.2.l0 while s0's COMMIT was running, before its rows were visible; the COMMIT then succeeded
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["notify_block", "a"], ["acquire", 0, 0, "exclusive", "xact", "acquire"], ["write", 0, "notify"], ["commit", 0], ["cut", "a"], ["acquire", 2, 0, "exclusive", "session", "acquire"], ["notify_unblock", "a"]]
[nemesis] [another application on a, as postgres] BEGIN; INSERT INTO ledger (tag) VALUES ('other'); NOTIFY explore_other; SET LOCAL synchronous_commit = on; COMMIT  -- waits for the standby, holding the NOTIFY queue lock
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] SELECT zk_lock_acquire_xact('x26737.2.l0', '2s')
[s0@a] --   SELECT 1 (15,)
[s0@a] INSERT INTO ledger (tag, lock, sess) VALUES ('2.s0.1', 'x26737.2.l0', 's0'); NOTIFY explore, '2.s0.1'
[s0@a] --   NOTIFY
[s0@a] COMMIT
[s0@a] -- (still running; the program goes on)
[nemesis] cut cluster a off ZooKeeper; wait 7 s (its session of 4 s expires)
[s2@b] SELECT zk_lock_acquire('x26737.2.l0', '2s')
[s2@b] --   SELECT 1 (17,)
[nemesis] [another application on a] its COMMIT's wait cancelled (pg_cancel_backend)
[s0@a] -- (returned: COMMIT)
[nemesis] reconnect cluster a to ZooKeeper
