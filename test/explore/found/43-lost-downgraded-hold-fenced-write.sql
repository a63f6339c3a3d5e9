-- zklock explorer: a violation, found on main (2de8162) after 329 s of the 60-minute run (seed 4646, batch 7)
-- fixed: an acquire is told of the loss of its lock, in either mode, before it takes anything (t/149); before, it stacked on the exclusive node kept for the lost read and held the lock after its ZK002
-- F(own token): s0 committed a fenced write (own) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["acquire", 0, 0, "exclusive", "session", "acquire"], ["downgrade", 0, 0, true], ["nemesis_delete", 0, 0], ["leader", 0]]
[s0@a] SELECT zk_lock_acquire('x13156.229.l0', '2s')
[s0@a] --   SELECT 1 (2148,)
[s0@a] SELECT zk_lock_acquire_shared('x13156.229.l0', '2s'), zk_lock_release('x13156.229.l0')
[s0@a] --   SELECT 1 (2149, True)
[nemesis] delete s0's node of x13156.229.l0 (shared): _c_02807bf4-cf13-4e55-bb61-e02f80f49593-__READ__0000000001
[s0@a] SELECT zk_lock_acquire('x13156.229.l0', '2s')
[s0@a] --   ERROR ZK002: ZooKeeper lock "x13156.229.l0" was lost
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] UPDATE fz229 SET body = 'own s0', token = zk_lock_token('x13156.229.l0') WHERE id = 1
[s0@a] --   UPDATE 1
[s0@a] COMMIT
[s0@a] --   COMMIT
