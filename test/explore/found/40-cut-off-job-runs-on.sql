-- zklock explorer: a violation, found on 51d208a after 217 s (seed 49, batch 3, the 30-minute run of issue 45)
-- J: s0's job, which took x28088.43.l1, wrote through dblink 5.8 s after cluster a was cut off ZooKeeper (its session of 4 s expired)
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["job", 0, 1], ["cut", "a"], ["pause"], ["leader", 1]]
[s0@a] SELECT explore_job('x28088.43.l1', '43.s0.job1', 6)
[s0@a] -- (still running; the program goes on)
[nemesis] cut cluster a off ZooKeeper; wait 7 s (its session of 4 s expires)
[s0@a] -- (returned: SELECT 1 (True,))
[nemesis] reconnect cluster a to ZooKeeper
