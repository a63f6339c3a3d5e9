-- zklock explorer: a violation, found on 51d208a after 20 s (seed 49, batch 1, the 30-minute run of issue 45)
-- Q: at quiescence, nodes left {'x28088.9.l0': ['_c_66ca5c1c-b2ed-483c-be83-b4de3f689aa2-lock-0000000001', '_c_c1bf37f3-fd6c-46a9-8696-953309e6e072-lock-0000000000']}, slots used {'a': 0, 'b': 0}
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["kz_acl_dir", 0, "delete"], ["nemesis_delete", 0, 0], ["release_then_try", 0, 0], ["commit", 0], ["acquire", 1, 0, "exclusive", "xact", "acquire"]]
[kazoo] create zk_lock_path('x28088.9.l0') with an ACL refusing DELETE to anyone but its maker
[s0@a] SELECT zk_lock_release('x28088.9.l0'), zk_lock_try('x28088.9.l0')
[s0@a] --   SELECT 1 (False, True)
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] SELECT zk_lock_acquire_xact('x28088.9.l0', '2s')
[s1@a] -- (still running; the program goes on)
[s1@a] -- (returned: ERROR 55P03: could not obtain ZooKeeper lock "x28088.9.l0")
[s1@a] COMMIT
[s1@a] --   ROLLBACK
