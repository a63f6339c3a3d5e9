-- zklock explorer: a violation, found after 1622 s (seed 45, batch 53)
-- O1: COMMIT failed (ERROR ZK002: could not confirm the ZooKeeper session before commit) but rows of its transaction are visible
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["write", 1, "fdw"], ["write", 1, "local"], ["open_cursor", 1, 1, true], ["cut", "a"]]
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] INSERT INTO fledger (tag, lock, sess) VALUES ('1559.s1.1', '', 's1')
[s1@a] --   INSERT 0 1
[s1@a] INSERT INTO ledger (tag, lock, sess) VALUES ('1559.s1.1', '', 's1')
[s1@a] --   INSERT 0 1
[s1@a] DECLARE c1 CURSOR FOR SELECT 1 / (2 - i) AS q, zk_lock_acquire_xact('x19701.1559.l1', '2s') AS t FROM generate_series(1, 3) i
[s1@a] --   DECLARE CURSOR
[s1@a] FETCH 1 FROM c1
[s1@a] --   FETCH 1 (1, 4772)
[nemesis] cut cluster a off ZooKeeper; wait 7 s (its session of 4 s expires)
[s1@a] COMMIT
[s1@a] -- (still running; the program goes on)
[s1@a] -- (returned: ERROR ZK002: could not confirm the ZooKeeper session before commit)
[nemesis] reconnect cluster a to ZooKeeper
