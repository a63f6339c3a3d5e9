/*-------------------------------------------------------------------------
 *
 * locks.c
 *		This backend's holds, in the backend: the local table of its
 *		slots by mode and name, the reentrant counts by scope, their release
 *		(explicit, at transaction end, savepoint rollback and exit) and the
 *		report of a lost lock.  acquire.c adds holds; xact_end.c ends them.
 *
 * A backend has at most one slot per lock name and mode; repeated acquires
 * stack on it as counts, kept apart for session and transaction scope, like
 * advisory locks.  The shared and the exclusive hold of one name are two
 * slots, two nodes in ZooKeeper, that never wait for each other.
 *
 * A transaction-scope hold belongs to the resource owner current when it was
 * taken, exactly as pg_advisory_xact_lock's lock does: a subtransaction that
 * commits passes it to its parent, one that aborts gives it back, and a
 * cursor's holds belong to its portal, whatever savepoint it was fetched in.
 * The whole transaction's holds go at its end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "backend/error_codes.h"
#include "backend/locks.h"
#include "backend/request.h"
#include "pg_compat.h"
#include "shared/stats.h"
#include "shared/wait_events.h"

static void zkl_drop_kept_exclusive(void);

StaticAssertDecl(ZKL_STATS_NAME_LEN == ZKL_MAX_NAME_LEN,
				 "zk_lock_stats keeps whole lock names");

HTAB	   *zkl_locks = NULL;

static bool zkl_exit_registered = false;

/*
 * A lock whose loss this transaction was told of (ZK002): it may not commit,
 * even when a savepoint or an exception block caught the error.  Empty when
 * none; cleared when the top-level transaction ends.
 */
char		zkl_lost_in_xact[ZKL_MAX_NAME_LEN + 1];

/*
 * A cursor's hold given back on an abort path while the transaction goes
 * on (zkl_note_released): the ZooKeeper session that granted it, 0 when
 * none, and its lock's name.  Cleared when the top-level transaction ends.
 */
int64		zkl_released_session = 0;
char		zkl_released_name[ZKL_MAX_NAME_LEN + 1];

void
zkl_local_init(void)
{
	HASHCTL		ctl;

	if (zkl_locks != NULL)
		return;
	ctl.keysize = ZKL_KEY_LEN;
	ctl.entrysize = sizeof(zkl_local_lock);
	zkl_locks = hash_create("zklock local locks", 64, &ctl, HASH_ELEM | HASH_STRINGS);
	if (!zkl_exit_registered)
	{
		before_shmem_exit(zkl_backend_exit, 0);
		zkl_exit_registered = true;
	}
}

void
zkl_make_key(char *key, const char *name, zkl_mode mode)
{
	key[0] = (char) mode;
	strlcpy(key + 1, name, ZKL_KEY_LEN - 1);
}

zkl_local_lock *
zkl_find_local(const char *name, zkl_mode mode)
{
	char		key[ZKL_KEY_LEN];

	if (zkl_locks == NULL)
		return NULL;
	zkl_make_key(key, name, mode);
	return hash_search(zkl_locks, key, HASH_FIND, NULL);
}

/*
 * A hold ends (its slot is about to be given back): count its time, and
 * how it ended, as its slot says: lost (the worker found its node gone, or
 * took it away: revoked under zklock.on_revoke = cancel, or held past
 * zklock.max_hold_time), asked to give the lock up, or neither.  lost: it
 * is known lost whatever the slot says (granted in an ended session).
 */
static void
zkl_stats_hold_end(zkl_local_lock *lock, bool lost)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];
	zkl_stats_sample sample = {0};
	zkl_take_reason reason = ZKL_TAKE_NONE;
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	if (slot->generation == lock->generation)
	{
		reason = slot->take_reason;
		lost = lost || slot->state == ZKL_SLOT_LOST || reason != ZKL_TAKE_NONE;
		sample.revoked = slot->revoke_requested;
	}
	LWLockRelease(zkl_shared->lock);

	sample.event = ZKL_STATS_HOLD_END;
	sample.hold_ms = Max(now - lock->granted_at, 0) / 1000.0;
	sample.end = reason == ZKL_TAKE_HOLD_LIMIT ? ZKL_STATS_HOLD_LIMIT :
		lost ? ZKL_STATS_LOST : ZKL_STATS_RELEASED;
	zkl_stats_count(lock->key + 1, lock->key[0], &sample, now);
}

/*
 * Give a lock's slot back and forget it: its entry, and every transaction
 * hold of it, so that no count of a later hold of the same name can be
 * taken down by a hold of this one.
 */
void
zkl_drop_local_as(zkl_local_lock *lock, bool lost)
{
	if (lock->granted_at != 0 && zkl_stats_enabled())
		zkl_stats_hold_end(lock, lost);
	(void) zkl_give_up(lock->slotno, lock->generation, false, false);
	zkl_forget_xact_holds(lock->key);
	hash_search(zkl_locks, lock->key, HASH_REMOVE, NULL);
}

void
zkl_drop_local(zkl_local_lock *lock)
{
	zkl_drop_local_as(lock, false);
}

void
zkl_update_slot_counts(zkl_local_lock *lock)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (slot->generation == lock->generation)
	{
		slot->session_count = lock->session_count;
		slot->xact_count = lock->xact_count;
	}
	LWLockRelease(zkl_shared->lock);
}

/*
 * A hold's counts changed: its node is given up once both are zero.  An
 * exclusive node stays while the backend holds the lock shared by a read
 * taken after it: that read was held at once, whatever writer was queued
 * between the two nodes (lock_rule.c), and the writer would otherwise take
 * the lock beside it.  The kept node goes with the last shared hold, or,
 * when cascade is false (a scan of zkl_locks is under way, which may only
 * remove its current entry), by zkl_drop_kept_exclusive afterwards.
 */
static void
zkl_settle_local(zkl_local_lock *lock, bool cascade)
{
	char		name[ZKL_KEY_LEN];
	zkl_mode	mode = (zkl_mode) lock->key[0];
	zkl_local_lock *other;

	if (lock->session_count > 0 || lock->xact_count > 0)
	{
		zkl_update_slot_counts(lock);
		return;
	}
	strlcpy(name, lock->key + 1, sizeof(name));
	if (mode == ZKL_MODE_EXCLUSIVE)
	{
		other = zkl_find_local(name, ZKL_MODE_SHARED);
		if (other != NULL && other->token > lock->token)
		{
			zkl_update_slot_counts(lock);
			return;
		}
	}
	zkl_drop_local(lock);
	if (mode == ZKL_MODE_SHARED && cascade)
	{
		other = zkl_find_local(name, ZKL_MODE_EXCLUSIVE);
		if (other != NULL && other->session_count == 0 && other->xact_count == 0)
			zkl_drop_local(other);
	}
}

/* Give up every exclusive node kept for a shared hold that is gone. */
static void
zkl_drop_kept_exclusive(void)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
		if ((zkl_mode) lock->key[0] == ZKL_MODE_EXCLUSIVE &&
			lock->session_count == 0 && lock->xact_count == 0 &&
			zkl_find_local(lock->key + 1, ZKL_MODE_SHARED) == NULL)
			zkl_drop_local(lock);
}

/*
 * Turn the newest transaction-scope hold of lock into a session-scope one
 * (a set taken for the session, once complete).
 */
void
zkl_xact_hold_to_session(zkl_local_lock *lock)
{
	zkl_drop_one_xact_hold(lock->key);
	lock->xact_count--;
	lock->session_count++;
	zkl_update_slot_counts(lock);
}

/*
 * The loss of name is being reported to this transaction: remember it, so
 * that the transaction cannot commit whoever catches the error.
 */
void
zkl_note_loss(const char *name)
{
	if (IsTransactionState() && zkl_lost_in_xact[0] == '\0')
		strlcpy(zkl_lost_in_xact, name, sizeof(zkl_lost_in_xact));
}

/* One more reentrant hold; every allocation comes before the count. */
void
zkl_count_hold(zkl_local_lock *lock, bool xact, const char *key)
{
	if (xact)
	{
		zkl_reserve_xact_hold();
		zkl_remember_xact_hold(key);
		lock->xact_count++;
	}
	else
		lock->session_count++;
	zkl_update_slot_counts(lock);
}

/* Whether the worker found this slot's hold lost, or is taking it away. */
static bool
zkl_slot_lost(zkl_local_lock *lock)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];
	bool		lost;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	lost = slot->generation == lock->generation &&
		(slot->state == ZKL_SLOT_LOST ||
		 (slot->state == ZKL_SLOT_HELD && slot->take_reason != ZKL_TAKE_NONE));
	LWLockRelease(zkl_shared->lock);
	return lost;
}

/*
 * The exclusive hold a shared hold of the same lock rests on: a read
 * requested after the backend's own exclusive node is granted at once,
 * whatever writer queued between the two (lock_rule.c), so it holds only
 * while that exclusive node does.  NULL when lock is not such a read.
 */
static zkl_local_lock *
zkl_supporting_exclusive(zkl_local_lock *lock)
{
	zkl_local_lock *other;

	if ((zkl_mode) lock->key[0] != ZKL_MODE_SHARED)
		return NULL;
	other = zkl_find_local(lock->key + 1, ZKL_MODE_EXCLUSIVE);
	return other != NULL && other->token < lock->token ? other : NULL;
}

/*
 * Whether a hold is lost: its own slot says so, or it is a shared hold
 * that rested on this backend's exclusive hold and that one is lost (a
 * writer queued between the two may hold now).
 */
bool
zkl_lock_is_lost(zkl_local_lock *lock)
{
	zkl_local_lock *basis;

	if (zkl_slot_lost(lock))
		return true;
	basis = zkl_supporting_exclusive(lock);
	return basis != NULL && zkl_slot_lost(basis);
}

/*
 * Forget a lost hold, with what rests on it or kept it: a shared hold
 * granted because of this exclusive one is lost with it, and an exclusive
 * node kept only for a lost shared hold goes too.
 */
static void
zkl_drop_lost(zkl_local_lock *lock)
{
	zkl_mode	mode = (zkl_mode) lock->key[0];
	char		name[ZKL_KEY_LEN];
	zkl_local_lock *shared;

	strlcpy(name, lock->key + 1, sizeof(name));
	shared = mode == ZKL_MODE_EXCLUSIVE ? zkl_find_local(name, ZKL_MODE_SHARED) : NULL;
	if (shared != NULL && zkl_supporting_exclusive(shared) == lock)
		zkl_drop_local_as(shared, true);
	else if (mode == ZKL_MODE_SHARED)
	{
		zkl_local_lock *basis = zkl_supporting_exclusive(lock);

		/* The exclusive hold this read rested on is lost: both are. */
		if (basis != NULL && zkl_slot_lost(basis))
			zkl_drop_local_as(basis, true);
	}
	zkl_drop_local_as(lock, true);
	zkl_drop_kept_exclusive();
}

/* Report a lock that the worker found lost, once, and forget it. */
void
zkl_report_if_lost(zkl_local_lock *lock)
{
	char		name[ZKL_MAX_NAME_LEN + 1];
	zkl_take_reason reason;
	int			max_hold_ms;
	bool		own;
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

	if (!zkl_lock_is_lost(lock))
		return;

	own = zkl_slot_lost(lock);
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	reason = slot->take_reason;
	max_hold_ms = slot->max_hold_ms;
	LWLockRelease(zkl_shared->lock);
	strlcpy(name, lock->key + 1, sizeof(name));
	zkl_drop_lost(lock);
	zkl_note_loss(name);
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_LOST),
			 errmsg("ZooKeeper lock \"%s\" was lost", name),
			 !own ?
			 errdetail("It was a shared hold granted because this session held the lock exclusively, and that exclusive hold was lost.") :
			 reason == ZKL_TAKE_REVOKED ?
			 errdetail("Its holder was asked to give it up (zk_lock_revoke), and zklock.on_revoke is \"cancel\".") :
			 reason == ZKL_TAKE_HOLD_LIMIT ?
			 errdetail("It was held longer than zklock.max_hold_time (%d ms) and given up.", max_hold_ms) :
			 errdetail("Its ZooKeeper node vanished while this session held it: the session expired or the node was deleted."),
			 errhint("Another client may have taken the lock; redo the work under a new lock.")));
}

/*
 * Report a lost hold of this backend, once, before an acquire takes
 * anything, and again when its request is granted, before the grant
 * becomes a hold (the error then gives the grant back: zkl_cancel_wait);
 * name's holds first, in either mode (exclusive first), then any other
 * (name NULL: any).  Were a loss found only at the statement's end, as a
 * commit finds it, the statement would fail with ZK002 and leave the hold
 * it had just taken (a session-scope one outlives the error): held, with
 * a token the client was never shown.  Reported here, the loss drops what
 * rested on the lost hold (an exclusive node kept for a lost read goes)
 * and nothing is taken.
 */
void
zkl_report_any_loss(const char *name, zkl_mode mode)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	if (zkl_locks == NULL)
		return;
	if (name != NULL && mode == ZKL_MODE_SEMAPHORE)
	{
		if ((lock = zkl_find_local(name, mode)) != NULL)
			zkl_report_if_lost(lock);
	}
	else if (name != NULL)
	{
		if ((lock = zkl_find_local(name, ZKL_MODE_EXCLUSIVE)) != NULL)
			zkl_report_if_lost(lock);
		if ((lock = zkl_find_local(name, ZKL_MODE_SHARED)) != NULL)
			zkl_report_if_lost(lock);
	}
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
	{
		if (zkl_lock_is_lost(lock))
		{
			hash_seq_term(&seq);
			zkl_report_if_lost(lock);
			break;				/* not reached: the report raises */
		}
	}
}

/*
 * The release gave the slot up, its node made in a directory whose ACL may
 * refuse the delete (the worker could not tell: undeletable.c): wait for
 * the delete's answer, so that a refusal is said to the caller.  Returns
 * false once the worker found the delete refused (the node stays,
 * "stranded" in zk_locks); true once the slot is gone: its node deleted,
 * or gone with the session that made it.  Without a connection the wait
 * goes on: the session may come back, and the delete then be refused.  It
 * ends with the session at the latest (the worker gives a session up when
 * it cannot prove it alive, and frees every slot given up with it), or by
 * a cancel.
 */
static bool
zkl_wait_release(int slotno, uint32 generation)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];

	for (;;)
	{
		bool		gone;
		bool		stranded;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		gone = slot->generation != generation || slot->state == ZKL_SLOT_FREE;
		stranded = !gone && slot->stranded;
		LWLockRelease(zkl_shared->lock);
		if (gone)
			return true;
		if (stranded)
			return false;
		/* The worker sets the latch; the timeout is a safety net. */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, zkl_wait_event(ZKL_WAIT_WORKER));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Release one session-scope hold; false plus a warning when there is none,
 * or when ZooKeeper refused the delete of its node (which then stays and
 * holds the lock against everyone: a release that did not free the lock).
 */
bool
zkl_release_session(text *name, zkl_mode mode)
{
	char		key[ZKL_MAX_NAME_LEN + 1];
	zkl_local_lock *lock;
	int			slotno;
	uint32		generation;
	bool		unsure;
	zkl_local_lock *after;

	zkl_require_shmem();
	zkl_refuse_parallel();
	zkl_name_key(name, key);
	lock = zkl_find_local(key, mode);
	if (lock == NULL || lock->session_count == 0)
	{
		ereport(WARNING,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 mode == ZKL_MODE_SHARED ? errmsg("you don't own a shared ZooKeeper lock named \"%s\"", key) :
				 mode == ZKL_MODE_SEMAPHORE ? errmsg("you don't own a permit of ZooKeeper semaphore \"%s\"", key) :
				 errmsg("you don't own a ZooKeeper lock named \"%s\"", key)));
		return false;
	}
	/* A lost hold's release says so, and its transaction cannot commit. */
	zkl_report_if_lost(lock);
	slotno = lock->slotno;
	generation = lock->generation;
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	unsure = zkl_shared->slots[slotno].generation == generation &&
		zkl_shared->slots[slotno].delete_unsure;
	LWLockRelease(zkl_shared->lock);
	lock->session_count--;
	zkl_settle_local(lock, true);
	after = zkl_find_local(key, mode);
	if (!unsure || (after != NULL && after->slotno == slotno && after->generation == generation))
		return true;
	if (zkl_wait_release(slotno, generation))
		return true;
	ereport(WARNING,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("ZooKeeper lock \"%s\" was given up, but ZooKeeper refused the delete of its node", key),
			 errdetail("The lock directory's ACL does not let zklock's identity delete its children: the node stays, and holds the lock against every client, until a later attempt deletes it or this cluster's ZooKeeper session ends. zk_locks shows it as \"stranded\"."),
			 errhint("Grant DELETE on the lock directory to zklock's identity (zklock.auth), or to anyone, as zklock's own directories do.")));
	return false;
}

/*
 * Release every session-scope hold.  With note_losses (zk_lock_release_all,
 * not DISCARD ALL, whose implicit commit a pooler's reset would see fail),
 * a lost one dooms the transaction's COMMIT, as its own release would.
 */
void
zkl_release_all_session(bool note_losses)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	zkl_require_shmem();
	zkl_refuse_parallel();
	if (zkl_locks == NULL)
		return;
	/* Many deletes at once: none waits for company (write_batch.c). */
	zkl_release_at_once = true;
	PG_TRY();
	{
		hash_seq_init(&seq, zkl_locks);
		while ((lock = hash_seq_search(&seq)) != NULL)
		{
			if (lock->session_count == 0)
				continue;
			if (note_losses && zkl_lock_is_lost(lock))
				zkl_note_loss(lock->key + 1);
			lock->session_count = 0;
			zkl_settle_local(lock, false);
		}
		zkl_drop_kept_exclusive();
	}
	PG_FINALLY();
	{
		zkl_release_at_once = false;
	}
	PG_END_TRY();
}

/*
 * This backend's hold of name (exclusive first), whether its slot holds it
 * now, and the session that granted it; NULL when it holds neither mode.
 */
static zkl_local_lock *
zkl_held_lock(text *name, bool *held, int64 *granted)
{
	char		key[ZKL_MAX_NAME_LEN + 1];
	zkl_local_lock *lock;
	zkl_slot   *slot;

	zkl_require_shmem();
	zkl_name_key(name, key);
	lock = zkl_find_local(key, ZKL_MODE_EXCLUSIVE);
	if (lock == NULL)
		lock = zkl_find_local(key, ZKL_MODE_SHARED);
	if (lock == NULL)
		return NULL;

	slot = &zkl_shared->slots[lock->slotno];
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	/* A hold given up by the worker (revoked, over its limit) is lost. */
	*held = slot->generation == lock->generation && slot->state == ZKL_SLOT_HELD &&
		slot->take_reason == ZKL_TAKE_NONE;
	*granted = *held ? slot->granted_session : 0;
	LWLockRelease(zkl_shared->lock);
	return lock;
}

/* The fencing token of a lock this backend holds (exclusive first), or false. */
bool
zkl_held_token(text *name, int64 *token)
{
	bool		held;
	int64		granted;
	zkl_local_lock *lock = zkl_held_lock(name, &held, &granted);

	if (lock == NULL)
		return false;
	*token = lock->token;
	return held;
}

/*
 * Whether this backend holds name and the session that granted the hold is
 * proven alive now, as a commit needs it (zk_lock_check).  The hold is read
 * before the proof, and the proof must be of the granting session: one
 * that expired and was replaced in between proves nothing about it.
 */
bool
zkl_held_proven(text *name)
{
	bool		held;
	int64		granted;
	int64		session;

	if (zkl_held_lock(name, &held, &granted) == NULL || !held)
		return false;
	return zkl_session_proven(NULL, NULL, &session) && session == granted;
}

/*
 * A lost hold is being given back on an abort path that does not end the
 * top-level transaction (a savepoint rolled back, a cursor's portal whose
 * FETCH failed, an exception block): the work done under it may live on in
 * the outer transaction, so its loss dooms that transaction's commit
 * exactly as a reported loss does.  zkl_note_loss cannot be used here: the
 * aborting subtransaction is no longer in progress.
 */
static void
zkl_doom_on_abort(zkl_local_lock *lock)
{
	/* A top-level abort (nesting level 1) dooms nothing: it ends it all. */
	if (GetCurrentTransactionNestLevel() > 1 &&
		zkl_lost_in_xact[0] == '\0' && zkl_lock_is_lost(lock))
	{
		strlcpy(zkl_lost_in_xact, lock->key + 1, sizeof(zkl_lost_in_xact));
		ereport(WARNING,
				(errcode(ERRCODE_ZKLOCK_LOST),
				 errmsg("ZooKeeper lock \"%s\" was lost", lock->key + 1),
				 errdetail("A hold of it was given back as a savepoint, cursor or exception block was rolled back; the transaction cannot commit."),
				 errhint("Roll back the transaction and redo the work under a new lock.")));
	}
}

/*
 * A hold of a cursor's portal is given back on an abort path (a FETCH that
 * failed inside a savepoint or an exception block), and the work done under
 * it outside the subtransaction lives on: its loss may simply not be known
 * yet (the worker cut off from ZooKeeper), so the commit must prove the
 * session that granted it as it proves the holds it keeps
 * (zkl_released_session).  Holds of two sessions: the older one expired,
 * and the hold of it was lost.
 */
static void
zkl_note_released(zkl_local_lock *lock)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];
	int64		granted = 0;

	if (GetCurrentTransactionNestLevel() <= 1)
		return;
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	if (slot->generation == lock->generation && slot->state == ZKL_SLOT_HELD)
		granted = slot->granted_session;
	LWLockRelease(zkl_shared->lock);
	if (granted == 0)
		return;
	if (zkl_released_session == 0)
	{
		zkl_released_session = granted;
		strlcpy(zkl_released_name, lock->key + 1, sizeof(zkl_released_name));
	}
	else if (zkl_released_session != granted && zkl_lost_in_xact[0] == '\0')
		strlcpy(zkl_lost_in_xact, zkl_released_name, sizeof(zkl_lost_in_xact));
}

/*
 * Give back the transaction-scope holds that belong to owner, newest first;
 * NULL: every one (the transaction ends).  abort_path: owner is a
 * subtransaction's or a portal's, released as an abort, and a lost hold
 * dooms the top-level transaction (zkl_doom_on_abort).  A hold settled may
 * drop its lock and, with it, other holds of the array: each round looks
 * again.
 */
void
zkl_release_xact_holds(ResourceOwner owner, bool abort_path)
{
	char		key[ZKL_KEY_LEN];
	int32		count;

	while (zkl_take_xact_hold(owner, key, &count))
	{
		zkl_local_lock *lock = hash_search(zkl_locks, key, HASH_FIND, NULL);

		if (lock == NULL || lock->xact_count <= 0)
			continue;
		if (abort_path)
		{
			zkl_doom_on_abort(lock);
			/* A portal's owner, not the subtransaction's own. */
			if (owner != CurTransactionResourceOwner)
				zkl_note_released(lock);
		}
		lock->xact_count = Max(lock->xact_count - count, 0);
		zkl_settle_local(lock, true);
	}
}

/* Our slots say fence_row: forgotten when the transaction ends. */
static bool zkl_fence_rows = false;

/*
 * This transaction has locked the fence row of name (fence.c) with the
 * token of its hold of lock name: should the lock be lost while the
 * transaction lasts, the worker ends this backend (zkl_mark_lost), so that
 * a stale holder idle in its transaction never keeps the row from the next
 * holder.  A lock lost already is reported now, before the row is kept.
 */
void
zkl_note_fence_row(text *name)
{
	bool		held;
	int64		granted;
	bool		lost;
	zkl_local_lock *lock = zkl_held_lock(name, &held, &granted);
	zkl_slot   *slot;

	if (lock == NULL)
		return;
	slot = &zkl_shared->slots[lock->slotno];
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	lost = slot->generation != lock->generation || slot->state != ZKL_SLOT_HELD;
	if (!lost)
	{
		slot->fence_row = true;
		zkl_fence_rows = true;
	}
	LWLockRelease(zkl_shared->lock);
	if (lost)
		zkl_report_if_lost(lock);
}

/* The transaction ended: its fence rows are no longer locked. */
void
zkl_forget_fence_rows(void)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	if (!zkl_fence_rows)
		return;
	zkl_fence_rows = false;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
	{
		zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

		if (slot->generation == lock->generation)
			slot->fence_row = false;
	}
	LWLockRelease(zkl_shared->lock);
}

/* Exit gives everything back, whatever the counts say. */
void
zkl_backend_exit(int code, Datum arg)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	if (zkl_shared == NULL || zkl_locks == NULL)
		return;
	/* Nothing of an exiting backend's waits for company (write_batch.c). */
	zkl_release_at_once = true;
	zkl_cancel_wait(true);
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
		zkl_drop_local(lock);
	zkl_forget_all_xact_holds();
}
