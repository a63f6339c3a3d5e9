-- zklock explorer: a violation, found on 51d208a after 405 s (seed 49, batch 5, the 30-minute run of issue 45)
-- X: s2 was granted x28088.92.l0 by a cursor while the kazoo client holds it
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["kz_try", 0, true, true], ["open_cursor", 2, 0, false]]
[kazoo] create kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk... (ephemeral, sequential, unreadable) in zk_lock_path('x28088.92.l0')
[kazoo] holds x28088.92.l0
[s2@b] BEGIN
[s2@b] --   BEGIN
[s2@b] DECLARE c1 CURSOR FOR SELECT zk_lock_acquire_xact('x28088.92.l0', '2s') AS t, 1 / (2 - i) AS q FROM generate_series(1, 3) i
[s2@b] --   DECLARE CURSOR
[s2@b] FETCH 1 FROM c1
[s2@b] --   FETCH 1 (490, 1)
