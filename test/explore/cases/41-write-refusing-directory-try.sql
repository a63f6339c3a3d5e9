-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 41:
-- in a directory refusing WRITE, release then try in one pass of the worker: false with nobody holding.
-- on 51d208a: T: s0 released x31068.1.l0 and tried it again in one statement: false, with nobody else holding or waiting for it
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["kz_acl_dir", 0, "write"], ["acquire", 0, 0, "exclusive", "session", "acquire"], ["pass", 0, ["release_then_try", 0]], ["pass", 0, ["release_then_try", 0]]]
[kazoo] create zk_lock_path('x31068.1.l0') with an ACL refusing WRITE to anyone but its maker
[s0@a] SELECT zk_lock_acquire('x31068.1.l0', '2s')
[s0@a] --   SELECT 1 (6,)
[nemesis] kill -STOP <zklock worker of cluster a>
[s0@a] SELECT zk_lock_release('x31068.1.l0'), zk_lock_try('x31068.1.l0')
[s0@a] -- (still running; the program goes on)
[nemesis] kill -CONT <zklock worker of cluster a>
[s0@a] -- (returned: SELECT 1 (True, True))
[nemesis] kill -STOP <zklock worker of cluster a>
[s0@a] SELECT zk_lock_release('x31068.1.l0'), zk_lock_try('x31068.1.l0')
[s0@a] -- (still running; the program goes on)
[nemesis] kill -CONT <zklock worker of cluster a>
[s0@a] -- (returned: SELECT 1 (True, False))
