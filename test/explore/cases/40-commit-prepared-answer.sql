-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 40:
-- COMMIT PREPARED reports ZK002 (a loss of the session's other lock) after it committed.
-- on 51d208a: O1(COMMIT PREPARED): COMMIT PREPARED failed (ZK002) but it committed: its rows are visible
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["acquire", 0, 0, "exclusive", "session", "acquire"], ["write", 0, "local"], ["prepare", 0], ["nemesis_delete", 0, 0], ["finish_prepared", 0, true]]
[s0@a] SELECT zk_lock_acquire('x21492.1.l0', '2s')
[s0@a] --   SELECT 1 (7,)
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] INSERT INTO ledger (tag, lock, sess) VALUES ('1.s0.1', 'x21492.1.l0', 's0')
[s0@a] --   INSERT 0 1
[s0@a] PREPARE TRANSACTION 'g1.s0.1'
[s0@a] --   PREPARE TRANSACTION
[nemesis] delete s0's node of x21492.1.l0 (exclusive): _c_da93f182-1c7b-4bb1-b21f-5c8f1b635016-lock-0000000000
[s0@a] COMMIT PREPARED 'g1.s0.1'
[s0@a] --   ERROR ZK002: ZooKeeper lock "x21492.1.l0" was lost
