-- zklock explorer: a violation, found after 27 s (seed 45, batch 2)
-- E: the zklock worker of cluster a ended on an error: 2026-11-28 04:11:16.165 UTC [23275] ERROR:  canceling statement due to user request
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["cancel_worker", "a"]]
[nemesis] SELECT pg_cancel_backend(<zklock worker of cluster a>)
