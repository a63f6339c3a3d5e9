-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 40:
-- a shared hold taken by the exclusive holder outlives the exclusive hold: zk_lock_check true while the queued writer holds.
-- on 51d208a: C: zk_lock_check('x10543.4.l0') is true in s0, which lost its holds of it, while s1 holds it exclusively
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["acquire", 0, 0, "exclusive", "session", "acquire"], ["acquire", 1, 0, "exclusive", "session", "acquire"], ["downgrade", 0, 0, false], ["nemesis_delete", 0, 0], ["check", 0, 0]]
[s0@a] SELECT zk_lock_acquire('x10543.4.l0', '2s')
[s0@a] --   SELECT 1 (24,)
[s1@a] SELECT zk_lock_acquire('x10543.4.l0', '2s')
[s1@a] -- (still running; the program goes on)
[s0@a] SELECT zk_lock_acquire_shared('x10543.4.l0', '2s')
[s0@a] --   SELECT 1 (26,)
[nemesis] delete s0's node of x10543.4.l0 (exclusive): _c_6a906dc4-c17b-48d8-9eda-c2c679627f0f-lock-0000000000
[s1@a] -- (returned: SELECT 1 (25,))
[s0@a] SELECT zk_lock_check('x10543.4.l0')
[s0@a] --   ERROR ZK002: ZooKeeper lock "x10543.4.l0" was lost
[s0@a] SELECT zk_lock_check('x10543.4.l0')
[s0@a] --   SELECT 1 (True,)
