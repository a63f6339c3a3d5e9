-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 45 (a review of the lost read's fix):
-- a session-scope hold of l1 deleted from outside, then an acquire of l0 (a leader): the acquire failed with ZK002 for l1 and kept l0, with a token never shown.
-- on 51fcea1: F(own token): s0 committed a fenced write (own) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["acquire", 0, 1, "exclusive", "session", "acquire"], ["nemesis_delete", 0, 1], ["leader", 0]]
[s0@a] SELECT zk_lock_acquire('x8861.1.l1', '2s')
[s0@a] --   SELECT 1 (7,)
[nemesis] delete s0's node of x8861.1.l1 (exclusive): _c_026f9bde-93e9-4c12-906f-f8929d5afb3e-lock-0000000000
[s0@a] SELECT zk_lock_acquire('x8861.1.l0', '2s')
[s0@a] --   ERROR ZK002: ZooKeeper lock "x8861.1.l1" was lost
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] UPDATE fz1 SET body = 'own s0', token = zk_lock_token('x8861.1.l0') WHERE id = 1
[s0@a] --   UPDATE 1
[s0@a] COMMIT
[s0@a] --   COMMIT
