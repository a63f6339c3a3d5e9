-- zklock explorer: a violation, found on 51d208a after 851 s (seed 49, batch 9, the 30-minute run of issue 45)
-- C: zk_lock_check('x28088.229.l0') is true in s0, which lost its holds of it, while s1 holds it exclusively
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["acquire", 0, 0, "exclusive", "session", "acquire"], ["acquire", 1, 0, "exclusive", "session", "acquire"], ["downgrade", 0, 0, false], ["nemesis_delete", 0, 0], ["check", 0, 0], ["commit", 0, true]]
[s0@a] SELECT zk_lock_acquire('x28088.229.l0', '2s')
[s0@a] --   SELECT 1 (1435,)
[s1@a] SELECT zk_lock_acquire('x28088.229.l0', '2s')
[s1@a] -- (still running; the program goes on)
[s0@a] SELECT zk_lock_acquire_shared('x28088.229.l0', '2s')
[s0@a] --   SELECT 1 (1437,)
[nemesis] delete s0's node of x28088.229.l0 (exclusive): _c_28624085-60f0-4696-92eb-42d90dfc40aa-lock-0000000000
[s1@a] -- (returned: SELECT 1 (1436,))
[s0@a] SELECT zk_lock_check('x28088.229.l0')
[s0@a] --   ERROR ZK002: ZooKeeper lock "x28088.229.l0" was lost
[s0@a] SELECT zk_lock_check('x28088.229.l0')
[s0@a] --   SELECT 1 (True,)
