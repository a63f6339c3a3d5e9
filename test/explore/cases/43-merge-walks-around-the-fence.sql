-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 43:
-- MERGE whose column list names the token (an action that never runs) by a session without the lock.
-- on 51d208a: F(merge): s0 committed a fenced write (merge) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["leader", 1], ["fenced", 0, "merge"]]
[s1@a] SELECT zk_lock_acquire('x21492.6.l0', '2s')
[s1@a] --   SELECT 1 (40,)
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] UPDATE fz6 SET body = 'own s1', token = zk_lock_token('x21492.6.l0') WHERE id = 1
[s1@a] --   UPDATE 1
[s1@a] COMMIT
[s1@a] --   COMMIT
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] MERGE INTO fz6 USING (SELECT 1 AS id) v ON fz6.id = v.id WHEN MATCHED AND false THEN UPDATE SET token = 0 WHEN MATCHED THEN UPDATE SET body = 'merge s0'
[s0@a] --   MERGE 1
[s0@a] COMMIT
[s0@a] --   COMMIT
