-- zklock explorer: a violation, found after 170 s (seed 45, batch 10)
-- X: s0 was granted x19701.281.l1 by a cursor while the kazoo client holds it
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["kz_try", 1, true, true], ["open_cursor", 0, 1, false]]
[kazoo] create kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk... (ephemeral, sequential, unreadable) in zk_lock_path('x19701.281.l1')
[kazoo] holds x19701.281.l1
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] DECLARE c1 CURSOR FOR SELECT zk_lock_acquire_xact('x19701.281.l1', '2s') AS t, 1 / (2 - i) AS q FROM generate_series(1, 3) i
[s0@a] --   DECLARE CURSOR
[s0@a] FETCH 1 FROM c1
[s0@a] --   FETCH 1 (561, 1)
