-- zklock explorer: a violation, found on 51d208a after 1141 s (seed 49, batch 12, the 30-minute run of issue 45)
-- O1(fdw): COMMIT failed (ERROR ZK002: ZooKeeper lock "x28088.328.l0" was lost) but rows of its transaction are visible
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["acquire", 0, 0, "shared", "session", "acquire"], ["nemesis_delete", 0, 0], ["write", 0, "fdw"]]
[s0@a] SELECT zk_lock_acquire_shared('x28088.328.l0', '2s')
[s0@a] --   SELECT 1 (1898,)
[nemesis] delete s0's node of x28088.328.l0 (shared): _c_610acfa0-ccfb-4aad-94e0-bdc1345d9cfe-__READ__0000000000
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] INSERT INTO fledger (tag, lock, sess) VALUES ('328.s0.1', 'x28088.328.l0', 's0')
[s0@a] --   INSERT 0 1
[s0@a] COMMIT
[s0@a] --   ERROR ZK002: ZooKeeper lock "x28088.328.l0" was lost
