-- zklock explorer: a program written by hand from the grammar's steps (not found unaided), issue 40:
-- a hold limit fires while the COMMIT waits for the synchronous standby: another session is granted before the rows are visible, the COMMIT then succeeds.
-- on 51d208a: V-commit(stalled): s0 was granted x21492.11.l0 while s2's COMMIT was running, before its rows were visible; the COMMIT then succeeded
-- replay: python3 test/explore/explore.py --replay THIS_FILE
-- program: [["hold_limit", 2], ["acquire", 2, 0, "exclusive", "xact", "acquire"], ["write", 2, "local"], ["commit", 2, true], ["acquire", 0, 0, "exclusive", "session", "acquire"], ["pause"]]
[s2@b] SET zklock.max_hold_time = '1s'
[s2@b] --   SET
[s2@b] BEGIN
[s2@b] --   BEGIN
[s2@b] SELECT zk_lock_acquire_xact('x21492.11.l0', '2s')
[s2@b] --   SELECT 1 (101,)
[s2@b] INSERT INTO ledger (tag, lock, sess) VALUES ('11.s2.1', 'x21492.11.l0', 's2')
[s2@b] --   INSERT 0 1
[s2@b] SET LOCAL synchronous_commit = on
[s2@b] --   SET
[s2@b] COMMIT
[s2@b] -- (still running; the program goes on)
[s0@a] SELECT zk_lock_acquire('x21492.11.l0', '2s')
[s0@a] -- (still running; the program goes on)
[nemesis] sleep 1.5 s
[s0@a] -- (returned: SELECT 1 (102,))
[s2@b] -- (returned: COMMIT)
