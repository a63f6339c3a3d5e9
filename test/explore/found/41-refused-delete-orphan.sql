-- zklock explorer: a violation, found after 418 s (seed 45, batch 20)
-- fixed by issue 41: a delete refused by the directory's ACL is reported and its node never left behind
-- Q: at quiescence, nodes left {'x19701.587.l0': ['_c_f42fc7f2-bfa7-40f0-9512-d20731ec3072-lock-0000000000']}, slots used {'a': 0, 'b': 0}
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["finish_prepared", 1, true], ["cut", "b"], ["kz_acl_dir", 0, "delete"], ["declare", 0, 0, false], ["prepare", 1], ["heal", "b"], ["fetch_in_savepoint", 0], ["begin", 1]]
[nemesis] cut cluster b off ZooKeeper; wait 7 s (its session of 4 s expires)
[kazoo] create zk_lock_path('x19701.587.l0') with an ACL refusing DELETE to anyone but its maker
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] DECLARE c1 CURSOR FOR SELECT zk_lock_acquire_xact('x19701.587.l0', '2s') AS t, 1 / (2 - i) AS q FROM generate_series(1, 3) i
[s0@a] --   DECLARE CURSOR
[nemesis] reconnect cluster b to ZooKeeper
[s0@a] SAVEPOINT sp0
[s0@a] --   SAVEPOINT
[s0@a] FETCH 1 FROM c1
[s0@a] --   FETCH 1 (1349, 1)
[s0@a] ROLLBACK TO sp0
[s0@a] --   ROLLBACK
[s1@a] BEGIN
[s1@a] --   BEGIN
[s0@a] COMMIT
[s0@a] --   COMMIT
[s1@a] COMMIT
[s1@a] --   COMMIT
