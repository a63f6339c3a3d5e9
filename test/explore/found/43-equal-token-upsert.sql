-- zklock explorer: a violation, found on 51d208a after 1008 s (seed 49, batch 11, the 30-minute run of issue 45)
-- F(token copied): s0 committed a fenced write (upsert) without holding the fence's lock
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["leader", 1], ["fenced", 0, "upsert"], ["commit", 0], ["cut", "a"], ["acquire", 1, 0, "exclusive", "session", "acquire"]]
[s1@a] SELECT zk_lock_acquire('x28088.268.l0', '2s')
[s1@a] --   SELECT 1 (1655,)
[s1@a] BEGIN
[s1@a] --   BEGIN
[s1@a] UPDATE fz268 SET body = 'own s1', token = zk_lock_token('x28088.268.l0') WHERE id = 1
[s1@a] --   UPDATE 1
[s1@a] COMMIT
[s1@a] --   COMMIT
[s0@a] BEGIN
[s0@a] --   BEGIN
[s0@a] INSERT INTO fz268 AS r VALUES (1, 'upsert s0', (SELECT token FROM fz268 WHERE id = 1)) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, token = EXCLUDED.token
[s0@a] --   INSERT 0 1
[s0@a] COMMIT
[s0@a] --   COMMIT
