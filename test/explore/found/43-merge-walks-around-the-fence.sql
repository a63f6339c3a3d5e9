-- zklock explorer: a violation, found on 51d208a after 1782 s (seed 49, batch 18, the 30-minute run of issue 45)
-- F(merge): s0 committed a fenced write (merge) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["leader", 1], ["fenced", 0, "merge"]]
[s1@a] SELECT zk_lock_acquire('x28088.464.l0', '2s')
[s1@a] --   SELECT 1 (2826,)
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] UPDATE fz464 SET body = 'own s1', token = zk_lock_token('x28088.464.l0') WHERE id = 1
[s1@a] --   UPDATE 1
[s1@a] COMMIT
[s1@a] --   COMMIT
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] MERGE INTO fz464 USING (SELECT 1 AS id) v ON fz464.id = v.id WHEN MATCHED AND false THEN UPDATE SET token = 0 WHEN MATCHED THEN UPDATE SET body = 'merge s0'
[s0@a] --   MERGE 1
[s0@a] COMMIT
[s0@a] --   COMMIT
