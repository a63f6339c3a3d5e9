-- zklock explorer: a violation, found after 117 s (seed 45, batch 7)
-- F(child_update): s0 committed a fenced write (child_update) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["fenced", 0, "child_update"]]
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] UPDATE fz205 SET body = 'child s0' WHERE id = 2
[s0@a] --   UPDATE 1
[s0@a] COMMIT
[s0@a] --   COMMIT
