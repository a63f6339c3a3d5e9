-- zklock explorer: a violation, found after 233 s (seed 45, batch 11)
-- F(child_insert): s1 committed a fenced write (child_insert) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["fenced", 1, "child_insert"]]
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] INSERT INTO fz390_c VALUES (101, 'child s1', 1)
[s1@a] --   INSERT 0 1
[s1@a] COMMIT
[s1@a] --   COMMIT
