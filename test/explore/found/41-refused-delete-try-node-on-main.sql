-- zklock explorer: a violation, found on main (86f490b, main's 0453311 merged) after 133 s of the 60-minute run (seed 4545, batch 3)
-- fixed by issue 41: a directory that refuses zklock's deletes is refused before a node is made in it (42501)
-- Q: at quiescence, nodes left {'x28967.53.l0': ['_c_e0450e43-3064-453d-8006-2710e84ab96c-lock-0000000000']}, slots used {'a': 0, 'b': 0}
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["kz_acl_dir", 0, "delete"], ["write", 0, "local"], ["thaw", "b"], ["revoke", 0], ["commit", 2], ["release_then_try", 0, 0], ["thaw", "b"]]
[kazoo] create zk_lock_path('x28967.53.l0') with an ACL refusing DELETE to anyone but its maker
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] INSERT INTO ledger (tag, lock, sess) VALUES ('53.s0.1', '', 's0')
[s0@a] --   INSERT 0 1
[nemesis] SELECT zk_lock_revoke('x28967.53.l0')  -- as superuser, zklock.on_revoke = cancel
[s0@a] SELECT zk_lock_release('x28967.53.l0'), zk_lock_try('x28967.53.l0')
[s0@a] --   SELECT 1 (False, True)
[s0@a] COMMIT
[s0@a] --   COMMIT
