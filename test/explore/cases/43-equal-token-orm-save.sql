-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 43:
-- the equal token: a session that never held the fence's lock saves the row as an ORM does (every column, the token as read) while the leader holds it.
-- on 51d208a: F(orm): s0 committed a fenced write (orm) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["leader", 1], ["fenced", 0, "orm"]]
[s1@a] SELECT zk_lock_acquire('x21492.3.l0', '2s')
[s1@a] --   SELECT 1 (23,)
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] UPDATE fz3 SET body = 'own s1', token = zk_lock_token('x21492.3.l0') WHERE id = 1
[s1@a] --   UPDATE 1
[s1@a] COMMIT
[s1@a] --   COMMIT
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] UPDATE fz3 SET body = 'orm s0', token = token WHERE id = 1
[s0@a] --   UPDATE 1
[s0@a] COMMIT
[s0@a] --   COMMIT
