-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 40:
-- doc/integrations.md's batch job on a cluster cut off ZooKeeper runs on and writes through dblink after its session expired.
-- on 51d208a: J: s0's job, which took x21492.5.l0, wrote through dblink 4.8 s after cluster a was cut off ZooKeeper (its session of 4 s expired)
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["job", 0, 0], ["cut", "a"], ["pause"]]
[s0@a] SELECT explore_job('x21492.5.l0', '5.s0.job1', 5)
[s0@a] -- (still running; the program goes on)
[nemesis] cut cluster a off ZooKeeper; wait 7 s (its session of 4 s expires)
[s0@a] -- (returned: SELECT 1 (True,))
[nemesis] reconnect cluster a to ZooKeeper
