-- zklock explorer: a violation, found on 51d208a after 466 s (seed 49, batch 6, the 30-minute run of issue 45)
-- F(inheritance child): s0 committed a fenced write (child_update) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["fenced", 0, "child_update"]]
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] UPDATE fz118 SET body = 'child s0' WHERE id = 2
[s0@a] --   UPDATE 1
[s0@a] COMMIT
[s0@a] --   COMMIT
