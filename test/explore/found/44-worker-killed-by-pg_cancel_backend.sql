-- zklock explorer: a violation, found on 51d208a after 114 s (seed 49, batch 2, the 30-minute run of issue 45)
-- E: the zklock worker of cluster a ended on an error: 2026-11-28 21:14:30.468 UTC [29822] ERROR:  canceling statement due to user request
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["cancel_worker", "a"]]
[nemesis] SELECT pg_cancel_backend(<zklock worker of cluster a>)
